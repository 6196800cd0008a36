// editguard serve over stdio, driven by the official TypeScript SDK client:
// two agents on one workspace, each with its own server process, as two
// MCP clients on one machine would be.

import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';

import { fails, numbered, ok, stdioClient, tempWorkspace } from './harness.mjs';

const sha256 = (b) => createHash('sha256').update(b).digest('hex');

const wantTools = [
  'read_file', 'write_file', 'edit_file', 'list_directory',
  'file_info', 'file_history', 'restore_file',
];

test('tools/list offers the file tools with input schemas', async (t) => {
  const { root } = tempWorkspace(t);
  const c = await stdioClient(t, root);
  const { tools } = await c.listTools();
  const byName = new Map(tools.map((tool) => [tool.name, tool]));
  for (const name of wantTools) {
    const tool = byName.get(name);
    assert.ok(tool, `tools/list lacks ${name}; got ${[...byName.keys()].join(', ')}`);
    assert.equal(tool.inputSchema.type, 'object', `${name}.inputSchema.type`);
    assert.ok(tool.description.length > 0, `${name} has no description`);
  }
  assert.ok(byName.get('read_file').annotations?.readOnlyHint, 'read_file should be annotated readOnlyHint');
});

test('two clients: the stale edit is refused, the re-read recovers it', async (t) => {
  const { root } = tempWorkspace(t);
  const file = path.join(root, 'notes.txt');
  fs.writeFileSync(file, 'alpha\nbeta\ngamma\n');

  const a = await stdioClient(t, root, { name: 'agent-a' });
  const b = await stdioClient(t, root, { name: 'agent-b' });

  const ra = await ok(a, 'read_file', { path: 'notes.txt' });
  const rb = await ok(b, 'read_file', { path: 'notes.txt' });
  for (const r of [ra, rb]) {
    assert.ok(r.text.endsWith(numbered('alpha\nbeta\ngamma\n')), `read_file text = ${JSON.stringify(r.text)}`);
    assert.equal(r.sha256, sha256(fs.readFileSync(file)));
    assert.equal(r.size_bytes, 17);
    assert.equal(r.total_lines, 3);
    assert.equal(r.truncated, false);
    assert.equal(r.line_ending, 'lf');
    assert.equal(typeof r.mtime_ms, 'number');
    assert.equal(typeof r.encoding, 'string');
  }

  const wa = await ok(a, 'edit_file', { path: 'notes.txt', old_string: 'alpha', new_string: 'ALPHA' });
  assert.equal(fs.readFileSync(file, 'utf8'), 'ALPHA\nbeta\ngamma\n');
  assert.equal(wa.sha256, sha256(fs.readFileSync(file)));

  // B still believes the file is what it read: its edit of the line A
  // changed must not land on top of A's change.
  const e = await fails(b, 'edit_file', { path: 'notes.txt', old_string: 'alpha', new_string: 'Alpha' }, 'STALE_FILE');
  assert.equal(e.details?.reason, 'modified', `details = ${JSON.stringify(e.details)}`);
  assert.ok(e.details?.not_merged, `details = ${JSON.stringify(e.details)}`);
  assert.equal(fs.readFileSync(file, 'utf8'), 'ALPHA\nbeta\ngamma\n', 'stale edit changed the file');

  const rb2 = await ok(b, 'read_file', { path: 'notes.txt' });
  assert.ok(rb2.text.endsWith(numbered('ALPHA\nbeta\ngamma\n')), `read_file text = ${JSON.stringify(rb2.text)}`);
  assert.equal(rb2.sha256, wa.sha256);
  await ok(b, 'edit_file', { path: 'notes.txt', edits: [{ old_string: 'gamma', new_string: 'GAMMA' }] });
  assert.equal(fs.readFileSync(file, 'utf8'), 'ALPHA\nbeta\nGAMMA\n', 'both changes must survive');

  // A has not seen B's change; its edit of another line merges over it,
  // and A is told.
  const m = await ok(a, 'edit_file', { path: 'notes.txt', old_string: 'ALPHA', new_string: 'ALPHA!' });
  assert.equal(m.merged, true, `result = ${JSON.stringify(m)}`);
  assert.ok(m.text.includes('Merged: ') && m.text.includes('+GAMMA'), `text = ${m.text}`);
  assert.equal(fs.readFileSync(file, 'utf8'), 'ALPHA!\nbeta\nGAMMA\n', 'the merge must keep B\'s change');

  // Each displaced version went to history.
  const h = await ok(a, 'file_history', { path: 'notes.txt' });
  assert.ok(JSON.stringify(h).includes(sha256('alpha\nbeta\ngamma\n')),
    `history lacks the original version: ${JSON.stringify(h)}`);
});

test('NOT_READ: an existing file that was never read is not changed', async (t) => {
  const { root } = tempWorkspace(t);
  const file = path.join(root, 'unread.txt');
  fs.writeFileSync(file, 'original\n');
  const c = await stdioClient(t, root);

  await fails(c, 'edit_file', { path: 'unread.txt', old_string: 'original', new_string: 'changed' }, 'NOT_READ');
  await fails(c, 'write_file', { path: 'unread.txt', content: 'replaced\n' }, 'NOT_READ');
  assert.equal(fs.readFileSync(file, 'utf8'), 'original\n');

  // A new file needs no read.
  const w = await ok(c, 'write_file', { path: 'sub/new.txt', content: 'fresh\n' });
  assert.equal(w.created, true);
  assert.equal(fs.readFileSync(path.join(root, 'sub/new.txt'), 'utf8'), 'fresh\n');
});

test('OUTSIDE_ROOT: ../escape is refused and nothing is written outside', async (t) => {
  const { parent, root } = tempWorkspace(t);
  const outside = path.join(parent, 'escape');
  fs.writeFileSync(outside, 'secret\n');
  const c = await stdioClient(t, root);

  await fails(c, 'read_file', { path: '../escape' }, 'OUTSIDE_ROOT');
  await fails(c, 'write_file', { path: '../escape', content: 'pwned\n' }, 'OUTSIDE_ROOT');
  await fails(c, 'write_file', { path: '../escape-new', content: 'pwned\n' }, 'OUTSIDE_ROOT');
  await fails(c, 'edit_file', { path: 'a/../../escape', old_string: 'secret', new_string: 'pwned' }, 'OUTSIDE_ROOT');
  assert.equal(fs.readFileSync(outside, 'utf8'), 'secret\n');
  assert.equal(fs.existsSync(path.join(parent, 'escape-new')), false, 'a file was created outside the root');
});

test('dry_run returns the diff and leaves the file untouched', async (t) => {
  const { root } = tempWorkspace(t);
  const file = path.join(root, 'dry.txt');
  fs.writeFileSync(file, 'one\ntwo\nthree\n');
  const before = fs.statSync(file);
  const c = await stdioClient(t, root);
  await ok(c, 'read_file', { path: 'dry.txt' });

  const r = await ok(c, 'edit_file', { path: 'dry.txt', old_string: 'two', new_string: 'TWO', dry_run: true });
  assert.match(r.text, /^-two$/m, `diff = ${JSON.stringify(r.text)}`);
  assert.match(r.text, /^\+TWO$/m, `diff = ${JSON.stringify(r.text)}`);
  const w = await ok(c, 'write_file', { path: 'dry.txt', content: 'replaced\n', dry_run: true });
  assert.match(w.text, /^\+replaced$/m, `diff = ${JSON.stringify(w.text)}`);

  assert.equal(fs.readFileSync(file, 'utf8'), 'one\ntwo\nthree\n');
  const after = fs.statSync(file);
  assert.equal(after.mtimeMs, before.mtimeMs, 'dry run touched the file');
  assert.equal(after.ino, before.ino, 'dry run replaced the file');

  // The dry run did not count as a change: the real edit still applies.
  await ok(c, 'edit_file', { path: 'dry.txt', old_string: 'two', new_string: 'TWO' });
  assert.equal(fs.readFileSync(file, 'utf8'), 'one\nTWO\nthree\n');
});
