// editguard serve --http: the same guarantees over streamable HTTP, with
// two MCP sessions on one server process.

import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';

import { fails, httpClient, httpServer, numbered, ok, tempWorkspace } from './harness.mjs';

test('streamable HTTP: two sessions, stale edit refused, re-read recovers', async (t) => {
  const { root } = tempWorkspace(t);
  const file = path.join(root, 'shared.md');
  fs.writeFileSync(file, '# Title\n\nbody\n');
  const { url } = await httpServer(t, root);

  const a = await httpClient(t, url, { name: 'http-a' });
  const b = await httpClient(t, url, { name: 'http-b' });
  const names = (await a.listTools()).tools.map((tool) => tool.name);
  for (const name of ['read_file', 'write_file', 'edit_file']) {
    assert.ok(names.includes(name), `tools/list over HTTP lacks ${name}: ${names}`);
  }

  await ok(a, 'read_file', { path: 'shared.md' });
  await ok(b, 'read_file', { path: 'shared.md' });
  await ok(a, 'edit_file', { path: 'shared.md', old_string: '# Title', new_string: '# New title' });

  // B edits the line A changed: refused (an edit elsewhere would merge).
  const e = await fails(b, 'edit_file', { path: 'shared.md', old_string: '# Title', new_string: '# B title' }, 'STALE_FILE');
  assert.equal(e.details?.reason, 'modified', `details = ${JSON.stringify(e.details)}`);
  assert.ok(e.details?.not_merged, `details = ${JSON.stringify(e.details)}`);
  assert.equal(fs.readFileSync(file, 'utf8'), '# New title\n\nbody\n');

  // The sessions keep separate read state: a third session has read nothing.
  const c = await httpClient(t, url, { name: 'http-c' });
  await fails(c, 'edit_file', { path: 'shared.md', old_string: 'body', new_string: 'BODY' }, 'NOT_READ');

  const r = await ok(b, 'read_file', { path: 'shared.md' });
  assert.ok(r.text.endsWith(numbered('# New title\n\nbody\n')), `read_file text = ${JSON.stringify(r.text)}`);
  await ok(b, 'edit_file', { path: 'shared.md', old_string: 'body', new_string: 'BODY' });
  assert.equal(fs.readFileSync(file, 'utf8'), '# New title\n\nBODY\n');

  await fails(a, 'read_file', { path: '../outside' }, 'OUTSIDE_ROOT');

  // Clients end their sessions before the server is stopped, as they would
  // when an editor closes.
  for (const client of [a, b, c]) await client.close();
});
