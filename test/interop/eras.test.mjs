// Both protocol eras on one `editguard serve --http`: the TypeScript SDK v2
// client (@modelcontextprotocol/client) at 2026-07-28, stateless, and the
// v1 client (@modelcontextprotocol/sdk) at 2025-11-25, with sessions.

import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';

import { Client as ClientV2, StreamableHTTPClientTransport as HTTPTransportV2 } from '@modelcontextprotocol/client';
import { StdioClientTransport as StdioTransportV2 } from '@modelcontextprotocol/client/stdio';
import { Client as ClientV1 } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as HTTPTransportV1 } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ElicitRequestSchema } from '@modelcontextprotocol/sdk/types.js';

import { editguardBin, fails, httpServer, ok, stdioClient, tempWorkspace, textOf } from './harness.mjs';

const MODERN = '2026-07-28';
const LEGACY = '2025-11-25';

/**
 * Starts serve --http with a tokens file of two agents, alice and bob, on
 * a fresh workspace holding files. Returns the endpoint, the root and the
 * tokens.
 */
async function erasServer(t, files, { approve, args = [] } = {}) {
  const { parent, root } = tempWorkspace(t);
  for (const [name, content] of Object.entries(files)) fs.writeFileSync(path.join(root, name), content);
  const tokens = { alice: crypto.randomBytes(32).toString('hex'), bob: crypto.randomBytes(32).toString('hex') };
  const tokensFile = path.join(parent, 'tokens');
  fs.writeFileSync(tokensFile, Object.entries(tokens).map(([a, tok]) => `${a} ${tok}\n`).join(''), { mode: 0o600 });
  const { url } = await httpServer(t, root, { approve, args: ['--tokens', tokensFile, '--rate', '0', ...args] });
  return { url, root, tokens };
}

/**
 * A fetch that sends each tools/call of tool twice with the same body, as a
 * client that lost the first answer does, and returns the second answer.
 * resent.count counts the calls sent twice.
 */
function resendingFetch(tool) {
  const f = async (url, init) => {
    const body = typeof init?.body === 'string' ? init.body : '';
    if (init?.method === 'POST' && body.includes('"method":"tools/call"') && body.includes(`"name":"${tool}"`)) {
      f.count++;
      const first = await fetch(url, init);
      await first.text(); // the lost answer
    }
    return fetch(url, init);
  };
  f.count = 0;
  return f;
}

/**
 * Connects agent's client of era ('modern': v2 at 2026-07-28, 'legacy': v1
 * at 2025-11-25) and checks that era was used. elicit is undefined, 'accept'
 * or 'decline'; questions are collected in client.elicitations.
 */
async function connect(t, srv, agent, era, { elicit, fetch: f, manual } = {}) {
  const requestInit = { headers: { Authorization: `Bearer ${srv.tokens[agent]}` } };
  const capabilities = elicit || manual ? { elicitation: {} } : {};
  const reply = (params) => {
    client.elicitations.push(params);
    return elicit === 'accept' ? { action: 'accept', content: { approve: true } } : { action: 'decline' };
  };
  let client;
  if (era === 'modern') {
    client = new ClientV2({ name: `${agent}-v2`, version: '1.0.0' }, {
      capabilities,
      versionNegotiation: { mode: { pin: MODERN } },
      inputRequired: manual ? { autoFulfill: false } : undefined,
    });
    if (elicit) client.setRequestHandler('elicitation/create', async (req) => reply(req.params));
    const transport = new HTTPTransportV2(srv.url, { requestInit, fetch: f });
    await client.connect(transport);
    assert.equal(client.getNegotiatedProtocolVersion(), MODERN);
    assert.equal(transport.sessionId, undefined, 'a 2026-07-28 connection has no session id');
  } else {
    client = new ClientV1({ name: `${agent}-v1`, version: '1.0.0' }, { capabilities });
    if (elicit) client.setRequestHandler(ElicitRequestSchema, async (req) => reply(req.params));
    const transport = new HTTPTransportV1(srv.url, { requestInit, fetch: f });
    await client.connect(transport);
    assert.equal(transport.protocolVersion, LEGACY);
    assert.ok(transport.sessionId, 'a 2025-11-25 connection has a session id');
  }
  client.elicitations = [];
  t.after(() => client.close());
  return client;
}

/** The ledger records of path with outcome ok, oldest first. */
function okRecords(root, file) {
  const out = execFileSync(editguardBin(), ['--root', root, 'log', '--reverse', '--json', '--path', file], { encoding: 'utf8' });
  return JSON.parse(out).records.filter((r) => r.outcome === 'ok');
}

/** Calls every tool once, successfully, in dir; returns the names called. */
async function callEveryTool(client, dir) {
  const called = new Set();
  const call = async (name, args) => {
    called.add(name);
    const res = await client.callTool({ name, arguments: args });
    assert.ok(!res.isError && textOf(res) !== '', `${name}(${JSON.stringify(args)}): ${JSON.stringify(res)}`);
    return res.structuredContent ?? res._meta?.['editguard/result'] ?? {};
  };
  const [a, b, c] = ['a.txt', 'b.txt', 'c.txt'].map((f) => `${dir}/${f}`);
  await call('create_directory', { path: dir });
  await call('write_file', { path: a, content: 'one\ntwo\n' });
  await call('list_allowed_directories', {});
  await call('read_file', { path: a });
  await call('read_multiple_files', { paths: [a] });
  await call('list_directory', { path: dir });
  await call('directory_tree', { path: dir });
  await call('find_files', { pattern: '*.txt', path: dir });
  await call('search_text', { pattern: 'one', path: dir });
  await call('file_info', { path: a });
  await call('edit_file', { path: a, old_string: 'one', new_string: 'uno' });
  const { versions } = await call('file_history', { path: a });
  assert.ok(versions?.length > 0, `file_history of ${a}: no versions`);
  await call('file_diff', { path: a, version: versions[0].version });
  await call('restore_file', { path: a, version: versions[0].version });
  const { tx } = await call('apply_patch', { patch: `*** Begin Patch\n*** Add File: ${b}\n+patched\n*** End Patch\n` });
  assert.ok(tx, 'apply_patch: no tx');
  await call('undo_patch', { tx });
  await call('write_file', { path: b, content: 'moved\n' });
  await call('move_file', { source: b, destination: c });
  await call('read_file', { path: c });
  await call('delete_file', { path: c });
  await call('begin_turn', {});
  const { session } = await call('begin_session', {});
  assert.match(session, /^egs_/);
  return called;
}

test('both eras: list and call every tool on one server', async (t) => {
  const srv = await erasServer(t, {});
  const modern = await connect(t, srv, 'alice', 'modern');
  const legacy = await connect(t, srv, 'alice', 'legacy');
  const modernTools = (await modern.listTools()).tools;
  const legacyTools = (await legacy.listTools()).tools;
  const names = modernTools.map((tool) => tool.name).sort();
  assert.deepEqual(legacyTools.map((tool) => tool.name).sort(), names);
  assert.ok(names.includes('begin_session'), `tools: ${names}`);
  for (const tool of modernTools) {
    assert.ok(tool.inputSchema.properties?.session, `${tool.name}: no session argument`);
  }
  for (const [era, client] of [['modern', modern], ['legacy', legacy]]) {
    const called = await callEveryTool(client, `dir-${era}`);
    assert.deepEqual([...called].sort(), names, `${era}: tools called`);
  }
});

test('2026-07-28: two agents with their own tokens conflict (STALE_FILE)', async (t) => {
  const srv = await erasServer(t, { 'a.txt': 'shared\n' });
  const a = await connect(t, srv, 'alice', 'modern');
  const b = await connect(t, srv, 'bob', 'modern');
  await ok(a, 'read_file', { path: 'a.txt' });
  await fails(b, 'edit_file', { path: 'a.txt', old_string: 'shared', new_string: 'bob' }, 'NOT_READ');
  await ok(b, 'read_file', { path: 'a.txt' });
  await ok(b, 'edit_file', { path: 'a.txt', old_string: 'shared', new_string: 'by bob' });
  await fails(a, 'edit_file', { path: 'a.txt', old_string: 'shared', new_string: 'by alice' }, 'STALE_FILE');
  assert.equal(fs.readFileSync(path.join(srv.root, 'a.txt'), 'utf8'), 'by bob\n');
  const sessions = okRecords(srv.root, 'a.txt').map((r) => r.session.split('/')[0]);
  assert.deepEqual(sessions, ['bob']);
});

test('begin_session handles are refused to another token, in both eras', async (t) => {
  const srv = await erasServer(t, { 'a.txt': 'one\n' });
  const a = await connect(t, srv, 'alice', 'modern');
  const { session } = await ok(a, 'begin_session', {});
  await ok(a, 'read_file', { path: 'a.txt', session });
  await fails(a, 'edit_file', { path: 'a.txt', old_string: 'one', new_string: '1' }, 'NOT_READ');
  for (const era of ['modern', 'legacy']) {
    const b = await connect(t, srv, 'bob', era);
    await fails(b, 'read_file', { path: 'a.txt', session }, 'PERMISSION_DENIED');
    await fails(b, 'edit_file', { path: 'a.txt', old_string: 'one', new_string: 'b', session }, 'PERMISSION_DENIED');
  }
  await ok(a, 'edit_file', { path: 'a.txt', old_string: 'one', new_string: '1', session });
  assert.equal(fs.readFileSync(path.join(srv.root, 'a.txt'), 'utf8'), '1\n');
});

test('--approve ask: input_required at 2026-07-28, elicitation at 2025-11-25', async (t) => {
  const srv = await erasServer(t, { 'a.txt': 'one\n' }, { approve: 'ask' });
  const file = path.join(srv.root, 'a.txt');

  // Manual mode: the question comes back as the call's result, nothing
  // is written until the call returns with the answer.
  const m = await connect(t, srv, 'alice', 'modern', { manual: true });
  await ok(m, 'read_file', { path: 'a.txt' });
  const edit = { name: 'edit_file', arguments: { path: 'a.txt', old_string: 'one', new_string: 'uno' } };
  const q = await m.callTool(edit, { allowInputRequired: true });
  assert.equal(q.resultType, 'input_required', JSON.stringify(q));
  assert.match(q.inputRequests.approve.params.message, /\+uno/);
  assert.ok(q.requestState);
  assert.equal(fs.readFileSync(file, 'utf8'), 'one\n', 'written before the answer');
  const declined = await m.callTool({ ...edit, inputResponses: { approve: { action: 'decline' } }, requestState: q.requestState });
  assert.equal(declined.isError, true);
  assert.match(textOf(declined), /^REJECTED/);
  assert.equal(fs.readFileSync(file, 'utf8'), 'one\n', 'written after a decline');

  // Automatic mode: the v2 client puts the question to its handler.
  const no = await connect(t, srv, 'alice', 'modern', { elicit: 'decline' });
  await fails(no, 'edit_file', edit.arguments, 'REJECTED');
  assert.equal(no.elicitations.length, 1);
  assert.equal(fs.readFileSync(file, 'utf8'), 'one\n');
  const yes = await connect(t, srv, 'alice', 'modern', { elicit: 'accept' });
  await ok(yes, 'edit_file', edit.arguments);
  assert.equal(yes.elicitations.length, 1);
  assert.match(yes.elicitations[0].message, /-one\n\+uno/);
  assert.equal(fs.readFileSync(file, 'utf8'), 'uno\n');

  // The 2025 client is asked by elicitation, as before.
  const old = await connect(t, srv, 'bob', 'legacy', { elicit: 'accept' });
  await ok(old, 'read_file', { path: 'a.txt' });
  await ok(old, 'edit_file', { path: 'a.txt', old_string: 'uno', new_string: 'dos' });
  assert.equal(old.elicitations.length, 1);
  assert.equal(fs.readFileSync(file, 'utf8'), 'dos\n');
  assert.equal(okRecords(srv.root, 'a.txt').length, 2);
});

test('a re-sent change applies once, in both eras', async (t) => {
  const srv = await erasServer(t, { 'modern.txt': 'log\n', 'legacy.txt': 'log\n' });
  for (const era of ['modern', 'legacy']) {
    const f = resendingFetch('write_file');
    const c = await connect(t, srv, 'alice', era, { fetch: f });
    const file = `${era}.txt`;
    await ok(c, 'read_file', { path: file });
    const res = await c.callTool({ name: 'write_file', arguments: { path: file, content: 'once\n', mode: 'append' } });
    assert.ok(!res.isError, JSON.stringify(res));
    assert.equal(res._meta?.['editguard/replayed'], true, `${era}: the second answer is the first`);
    assert.equal(f.count, 1);
    // By idempotency key in _meta: two calls with their own ids.
    const keyed = { name: 'edit_file', arguments: { path: file, old_string: 'once', new_string: 'twice' }, _meta: { 'editguard/idempotency_key': `k-${era}` } };
    const first = await c.callTool(keyed);
    const second = await c.callTool(keyed);
    assert.ok(!first.isError && !second.isError, JSON.stringify([first, second]));
    assert.equal(textOf(second), textOf(first));
    assert.equal(fs.readFileSync(path.join(srv.root, file), 'utf8'), 'log\ntwice\n');
    assert.equal(okRecords(srv.root, file).length, 2, `${era}: one record of the append, one of the edit`);
  }
});

test('stdio: a 2026-07-28 client and a 2025-11-25 client, approval in both', async (t) => {
  const { root } = tempWorkspace(t);
  fs.writeFileSync(path.join(root, 'a.txt'), 'one\n');
  const modern = new ClientV2({ name: 'stdio-v2', version: '1.0.0' }, {
    capabilities: { elicitation: {} },
    versionNegotiation: { mode: { pin: MODERN } },
  });
  const asked = [];
  modern.setRequestHandler('elicitation/create', async (req) => {
    asked.push(req.params.message);
    return { action: 'accept', content: { approve: true } };
  });
  await modern.connect(new StdioTransportV2({ command: editguardBin(), args: ['--root', root, 'serve', '--approve', 'ask'], cwd: root }));
  t.after(() => modern.close());
  assert.equal(modern.getNegotiatedProtocolVersion(), MODERN);
  await ok(modern, 'read_file', { path: 'a.txt' });
  await ok(modern, 'edit_file', { path: 'a.txt', old_string: 'one', new_string: 'uno' });
  assert.equal(asked.length, 1);
  assert.match(asked[0], /\+uno/);

  const legacy = await stdioClient(t, root, { approve: 'ask', elicit: 'accept' });
  await ok(legacy, 'read_file', { path: 'a.txt' });
  await ok(legacy, 'edit_file', { path: 'a.txt', old_string: 'uno', new_string: 'dos' });
  assert.equal(legacy.elicitations.length, 1);
  assert.equal(fs.readFileSync(path.join(root, 'a.txt'), 'utf8'), 'dos\n');
});
