// editguard serve --approve ask: every change is put to the person through
// MCP elicitation before it is written, and a client that cannot ask gets a
// refusal, never a silent write.

import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';

import { fails, ok, stdioClient, tempWorkspace } from './harness.mjs';

function setup(t) {
  const { root } = tempWorkspace(t);
  const file = path.join(root, 'guarded.txt');
  fs.writeFileSync(file, 'keep me\n');
  return { root, file };
}

test('ask + client accepts: the edit is written', async (t) => {
  const { root, file } = setup(t);
  const c = await stdioClient(t, root, { approve: 'ask', elicit: 'accept' });
  await ok(c, 'read_file', { path: 'guarded.txt' });
  await ok(c, 'edit_file', { path: 'guarded.txt', old_string: 'keep me', new_string: 'approved' });
  assert.equal(c.elicitations.length, 1, `elicitations = ${JSON.stringify(c.elicitations)}`);
  assert.ok(c.elicitations[0].message.includes('guarded.txt'),
    `the question should name the file: ${JSON.stringify(c.elicitations[0])}`);
  assert.equal(fs.readFileSync(file, 'utf8'), 'approved\n');

  await ok(c, 'write_file', { path: 'created.txt', content: 'new\n' });
  assert.equal(c.elicitations.length, 2, 'creating a file must be asked too');
  assert.equal(fs.readFileSync(path.join(root, 'created.txt'), 'utf8'), 'new\n');
});

test('ask + client declines: REJECTED and the file is untouched', async (t) => {
  const { root, file } = setup(t);
  const c = await stdioClient(t, root, { approve: 'ask', elicit: 'decline' });
  await ok(c, 'read_file', { path: 'guarded.txt' });
  await fails(c, 'edit_file', { path: 'guarded.txt', old_string: 'keep me', new_string: 'declined' }, 'REJECTED');
  await fails(c, 'write_file', { path: 'guarded.txt', content: 'declined\n' }, 'REJECTED');
  await fails(c, 'write_file', { path: 'never.txt', content: 'declined\n' }, 'REJECTED');
  assert.equal(c.elicitations.length, 3, `elicitations = ${JSON.stringify(c.elicitations)}`);
  assert.equal(fs.readFileSync(file, 'utf8'), 'keep me\n');
  assert.equal(fs.existsSync(path.join(root, 'never.txt')), false);
});

test('ask + client without elicitation: REJECTED (fail closed), untouched', async (t) => {
  const { root, file } = setup(t);
  const c = await stdioClient(t, root, { approve: 'ask' });
  await ok(c, 'read_file', { path: 'guarded.txt' });
  await fails(c, 'edit_file', { path: 'guarded.txt', old_string: 'keep me', new_string: 'unasked' }, 'REJECTED');
  await fails(c, 'write_file', { path: 'never.txt', content: 'unasked\n' }, 'REJECTED');
  assert.equal(fs.readFileSync(file, 'utf8'), 'keep me\n');
  assert.equal(fs.existsSync(path.join(root, 'never.txt')), false);
});

test('read-only: no tool that changes a file is offered', async (t) => {
  const { root, file } = setup(t);
  const c = await stdioClient(t, root, { approve: 'read-only' });
  const names = (await c.listTools()).tools.map((tool) => tool.name);
  assert.ok(names.includes('read_file'), `tools = ${names}`);
  for (const name of ['write_file', 'edit_file', 'restore_file']) {
    assert.ok(!names.includes(name), `read-only server offers ${name}`);
  }
  // Calling it anyway is refused, as a tool error or a protocol error.
  let res;
  try {
    res = await c.callTool({ name: 'write_file', arguments: { path: 'guarded.txt', content: 'x\n' } });
  } catch (err) {
    res = { isError: true, thrown: err.message };
  }
  assert.equal(res.isError, true, `write_file on a read-only server = ${JSON.stringify(res)}`);
  assert.equal(fs.readFileSync(file, 'utf8'), 'keep me\n');
});
