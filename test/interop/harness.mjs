// Shared setup for the interop tests: a temporary workspace, editguard
// started as a real MCP server (stdio or streamable HTTP), and clients from
// the official TypeScript SDK connected to it.

import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ElicitRequestSchema } from '@modelcontextprotocol/sdk/types.js';

/** The editguard binary under test. */
export function editguardBin() {
  const bin = process.env.EDITGUARD_BIN;
  assert.ok(bin, 'EDITGUARD_BIN must name a built editguard binary');
  assert.ok(fs.existsSync(bin), `EDITGUARD_BIN=${bin} does not exist`);
  return bin;
}

/**
 * A fresh temporary directory holding a workspace directory "ws". The parent
 * is there so tests can check that nothing escapes the root.
 */
export function tempWorkspace(t) {
  const parent = fs.mkdtempSync(path.join(os.tmpdir(), 'editguard-interop-'));
  const root = path.join(parent, 'ws');
  fs.mkdirSync(root);
  const stops = [];
  servers.set(root, stops);
  // The servers on the root stop first: one still running writes its
  // state on the way out, under a directory being removed.
  t.after(async () => {
    for (const stop of stops) await stop();
    servers.delete(root);
    fs.rmSync(parent, { recursive: true, force: true });
  });
  return { parent, root };
}

/** The ways to stop the servers started on each temporary workspace. */
const servers = new Map();

/**
 * Runs stop when the test ends: before its workspace is removed if root is
 * one of tempWorkspace's, else as a hook of its own.
 */
function atEnd(t, root, stop) {
  const stops = servers.get(root);
  if (stops) stops.push(stop);
  t.after(stop);
}

/**
 * The reply of an elicitation handler that accepts: every field the server
 * asks for gets its default, or else a yes-like value of its type.
 */
function acceptContent(schema) {
  const content = {};
  for (const [name, prop] of Object.entries(schema?.properties ?? {})) {
    if (prop.default !== undefined) content[name] = prop.default;
    else if (prop.type === 'boolean') content[name] = true;
    else if (Array.isArray(prop.enum) && prop.enum.length > 0) content[name] = prop.enum[0];
    else if (Array.isArray(prop.oneOf) && prop.oneOf.length > 0) content[name] = prop.oneOf[0].const;
    else if (prop.type === 'number' || prop.type === 'integer') content[name] = prop.minimum ?? 1;
    else if (prop.type === 'string') content[name] = 'yes';
  }
  return content;
}

/**
 * A client of the official SDK. elicit is undefined (the client does not
 * declare the elicitation capability), 'accept' or 'decline'. The requests
 * the client was asked to approve are collected in client.elicitations.
 */
function newClient(name, elicit) {
  const capabilities = elicit ? { elicitation: {} } : {};
  const client = new Client({ name, version: '1.0.0' }, { capabilities });
  client.elicitations = [];
  if (elicit) {
    client.setRequestHandler(ElicitRequestSchema, async (req) => {
      client.elicitations.push(req.params);
      if (elicit === 'accept') {
        return { action: 'accept', content: acceptContent(req.params.requestedSchema) };
      }
      return { action: 'decline' };
    });
  }
  return client;
}

/**
 * Starts `editguard --root root serve [--approve mode]` over stdio and
 * connects a client to it. The server's stderr is kept for failure messages.
 */
export async function stdioClient(t, root, { name = 'interop', approve, elicit } = {}) {
  const args = ['--root', root, 'serve'];
  if (approve) args.push('--approve', approve);
  const transport = new StdioClientTransport({
    command: editguardBin(),
    args,
    cwd: root,
    stderr: 'pipe',
  });
  let stderr = '';
  transport.stderr?.on('data', (b) => { stderr += b; });
  const client = newClient(name, elicit);
  try {
    await client.connect(transport);
  } catch (err) {
    throw new Error(`connect to ${editguardBin()} ${args.join(' ')}: ${err.message}\nserver stderr:\n${stderr}`);
  }
  client.serverStderr = () => stderr;
  atEnd(t, root, () => client.close()); // close waits for the server to exit
  return client;
}

/** A TCP port that was free a moment ago. */
async function freePort() {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.on('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address();
      srv.close(() => resolve(port));
    });
  });
}

/**
 * Starts `editguard --root root serve --http 127.0.0.1:PORT [args...]` and
 * waits until it accepts connections. Returns the /mcp endpoint URL.
 */
export async function httpServer(t, root, { approve, args: more = [] } = {}) {
  const port = await freePort();
  const args = ['--root', root, 'serve', '--http', `127.0.0.1:${port}`, ...more];
  if (approve) args.push('--approve', approve);
  const proc = spawn(editguardBin(), args, { cwd: root, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  proc.stdout.on('data', (b) => { output += b; });
  proc.stderr.on('data', (b) => { output += b; });
  const exited = new Promise((resolve) => proc.on('exit', (code, signal) => resolve({ code, signal })));
  atEnd(t, root, async () => {
    if (proc.exitCode === null && proc.signalCode === null) {
      proc.kill('SIGTERM');
    }
    await exited;
  });

  const deadline = Date.now() + 10_000;
  for (;;) {
    if (proc.exitCode !== null) {
      throw new Error(`editguard ${args.join(' ')} exited with ${proc.exitCode}:\n${output}`);
    }
    const up = await new Promise((resolve) => {
      const s = net.connect(port, '127.0.0.1');
      s.on('connect', () => { s.destroy(); resolve(true); });
      s.on('error', () => resolve(false));
    });
    if (up) break;
    if (Date.now() > deadline) throw new Error(`editguard did not listen on ${port} within 10s:\n${output}`);
    await new Promise((r) => setTimeout(r, 50));
  }
  return { url: new URL(`http://127.0.0.1:${port}/mcp`), output: () => output };
}

/** Connects a client to a streamable HTTP endpoint. */
export async function httpClient(t, url, { name = 'interop-http', elicit } = {}) {
  const client = newClient(name, elicit);
  await client.connect(new StreamableHTTPClientTransport(url));
  t.after(() => client.close());
  return client;
}

/** The tools whose result a model reads as text alone (no structuredContent). */
const textOnly = new Set(['read_file', 'write_file', 'edit_file', 'delete_file', 'move_file', 'restore_file', 'read_multiple_files', 'directory_tree', 'file_diff', 'find_files', 'search_text', 'apply_patch', 'undo_patch', 'list_directory', 'file_info', 'file_history']);

/** The text content of a result. */
export function textOf(res) {
  return res.content.filter((c) => c.type === 'text').map((c) => c.text).join('');
}

/**
 * Calls a tool and checks that it succeeded; returns structuredContent, or
 * for a text-only tool the result in _meta with the text as `text`.
 */
export async function ok(client, name, args) {
  const res = await client.callTool({ name, arguments: args });
  assert.ok(!res.isError, `${name}(${JSON.stringify(args)}) failed: ${JSON.stringify(res)}`);
  if (textOnly.has(name)) {
    assert.equal(res.structuredContent, undefined, `${name}: structuredContent would hide the text from some clients`);
    const meta = res._meta?.['editguard/result'];
    assert.ok(meta, `${name}: no _meta result in ${JSON.stringify(res)}`);
    return { ...meta, text: textOf(res) };
  }
  assert.ok(res.structuredContent, `${name}: no structuredContent in ${JSON.stringify(res)}`);
  return res.structuredContent;
}

/** The numbered lines read_file shows for text (without its header). */
export function numbered(text) {
  const lines = text.split('\n');
  if (lines.at(-1) === '') lines.pop();
  return lines.map((l, i) => `${String(i + 1).padStart(6)}\t${l}\n`).join('');
}

/**
 * Calls a tool and checks that it failed with the given error code; returns
 * the error object (structuredContent).
 */
export async function fails(client, name, args, code) {
  const res = await client.callTool({ name, arguments: args });
  assert.equal(res.isError, true, `${name}(${JSON.stringify(args)}) = ${JSON.stringify(res)}, want isError with ${code}`);
  assert.equal(res.structuredContent, undefined, `${name}: error with structuredContent`);
  assert.ok(textOf(res).startsWith(code), `${name}: error text ${JSON.stringify(textOf(res))} does not start with ${code}`);
  const e = res._meta?.['editguard/error'];
  assert.ok(e, `${name}: error without _meta error object: ${JSON.stringify(res)}`);
  assert.equal(e.code, code, `${name}: code = ${e.code}, want ${code}; error: ${JSON.stringify(e)}`);
  assert.match(textOf(res), /\nhint: /, `${name}: error text without a hint: ${textOf(res)}`);
  return e;
}
