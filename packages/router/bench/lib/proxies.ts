/**
 * What overhead.ts compares warmpath's router against, as programs: HAProxy
 * and nginx configurations (one thread or worker, keep-alive to one
 * upstream), and two floors written for Node — node:http in and undici out,
 * and raw sockets both ways — that do nothing a proxy could skip.
 */
import { spawnSync } from 'node:child_process';
import { createServer as createNetServer, type AddressInfo } from 'node:net';

/** A port free on 127.0.0.1 now (for a program that takes its port as configuration). */
export async function freePort(): Promise<number> {
  const s = createNetServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  const port = (s.address() as AddressInfo).port;
  await new Promise((r) => s.close(r));
  return port;
}

/** Is `bin` on the PATH? */
export const installed = (bin: string): boolean => spawnSync(bin, ['-v'], { stdio: 'ignore' }).error === undefined;

export function haproxyConfig(port: number, upstreamPort: number): string {
  return `global
  nbthread 1
  maxconn 4096
defaults
  mode http
  timeout connect 5s
  timeout client 60s
  timeout server 60s
  option http-keep-alive
frontend f
  bind 127.0.0.1:${port}
  default_backend b
backend b
  http-reuse always
  server up 127.0.0.1:${upstreamPort}
`;
}

export function nginxConfig(port: number, upstreamPort: number, dir: string): string {
  return `daemon off;
master_process off;
worker_processes 1;
pid ${dir}/nginx.pid;
error_log ${dir}/nginx-error.log warn;
events { worker_connections 4096; }
http {
  access_log /dev/null;
  client_body_temp_path ${dir}/nginx-body;
  proxy_temp_path ${dir}/nginx-proxy;
  client_max_body_size 16m;
  client_body_buffer_size 1m;
  keepalive_requests 1000000;
  upstream up { server 127.0.0.1:${upstreamPort}; keepalive 64; }
  server {
    listen 127.0.0.1:${port};
    location / {
      proxy_pass http://up;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_buffering off;
      proxy_request_buffering off;
    }
  }
}
`;
}

// The floor of any proxy on Node's HTTP stack: node:http in, undici out, nothing else (no parsing, placement, logs or metrics).
export const NODE_FLOOR_JS = `
const { Pool } = require(process.argv[1]);
const pool = new Pool(process.argv[2], { connections: 256 });
const server = require('node:http').createServer((req, res) => {
  const chunks = [];
  req.on('data', (c) => chunks.push(c));
  req.on('end', async () => {
    const body = Buffer.concat(chunks);
    const up = await pool.request({ path: req.url, method: 'POST', headers: { 'content-type': 'application/json', 'content-length': String(body.length) }, body });
    res.writeHead(up.statusCode, { 'content-type': up.headers['content-type'], 'content-length': up.headers['content-length'] });
    up.body.pipe(res);
  });
});
server.listen(0, '127.0.0.1', () => console.log(server.address().port));
`;

// The floor of any proxy written for Node: raw sockets both ways, the heads scanned for Content-Length and nothing else.
export const SOCKET_FLOOR_JS = `
const net = require('node:net');
const up = new URL(process.argv[1]);
const END = Buffer.from('\\r\\n\\r\\n');
// A complete message at the start of buf: [head end, message end], or undefined while more bytes are due.
const message = (buf) => {
  const head = buf.indexOf(END);
  if (head < 0) return undefined;
  const m = /\\r\\ncontent-length: *(\\d+)/i.exec(buf.latin1Slice(0, head));
  const end = head + 4 + (m ? Number(m[1]) : 0);
  return buf.length < end ? undefined : [head + 4, end];
};
const server = net.createServer({ noDelay: true }, (client) => {
  const upstream = net.connect({ host: up.hostname, port: Number(up.port), noDelay: true });
  let fromClient = Buffer.alloc(0);
  let fromUpstream = Buffer.alloc(0);
  let waiting = false;
  const next = () => {
    const m = waiting ? undefined : message(fromClient);
    if (m === undefined) return;
    waiting = true;
    const head = fromClient.latin1Slice(0, m[0]);
    const line = head.slice(0, head.indexOf('\\r\\n'));
    upstream.write(line + '\\r\\nhost: ' + up.host + '\\r\\ncontent-type: application/json\\r\\ncontent-length: ' + (m[1] - m[0]) + '\\r\\n\\r\\n');
    upstream.write(fromClient.subarray(m[0], m[1]));
    fromClient = fromClient.subarray(m[1]);
  };
  client.on('data', (d) => {
    fromClient = fromClient.length === 0 ? d : Buffer.concat([fromClient, d]);
    next();
  });
  upstream.on('data', (d) => {
    fromUpstream = fromUpstream.length === 0 ? d : Buffer.concat([fromUpstream, d]);
    const m = message(fromUpstream);
    if (m === undefined) return;
    client.write(fromUpstream.subarray(0, m[1]));
    fromUpstream = fromUpstream.subarray(m[1]);
    waiting = false;
    next();
  });
  client.on('close', () => upstream.destroy());
  upstream.on('close', () => client.destroy());
  client.on('error', () => {});
  upstream.on('error', () => {});
});
server.listen(0, '127.0.0.1', () => console.log(server.address().port));
`;
