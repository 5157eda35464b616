#!/usr/bin/env node
// Drops the Wasm exports of classes the workers-rs crates export but this
// Worker never uses, so that wasm-opt can drop their code (a link can
// only keep every `#[wasm_bindgen]` export of every dependency). Only the
// operator module links workers-rs now (the request path does without it,
// src/runtime.rs); in the request path these were 3.5 KB, gzipped. The glue's JS for those
// classes stays, and would only reach for an export if something built
// one of them, which nothing here does (the Worker tests would fail with
// "not a function" the day something did).
//
//   node scripts/strip-exports.mjs IN.wasm OUT.wasm
//
// Which classes: a container's startup options, a fetch's minify settings,
// an R2 range, and wasm-streams' adapters from a Rust stream to a JS one
// (bodies cross as JS streams here, never as Rust streams).
import { readFileSync, writeFileSync } from "node:fs";

const UNUSED = /^(__wbg_(get_|set_)?)?(containerstartupoptions|minifyconfig|r2range|intounderlying(bytesource|sink|source))_/;

const [input, output] = process.argv.slice(2);
if (!input || !output) {
  console.error("usage: node scripts/strip-exports.mjs IN.wasm OUT.wasm");
  process.exit(2);
}
const bytes = readFileSync(input);

function leb(at) {
  let value = 0;
  let shift = 0;
  for (;;) {
    const byte = bytes[at++];
    value += (byte & 0x7f) * 2 ** shift;
    shift += 7;
    if (byte < 0x80) return [value, at];
  }
}

function encode(value) {
  const out = [];
  do {
    let byte = value % 128;
    value = Math.floor(value / 128);
    if (value > 0) byte |= 0x80;
    out.push(byte);
  } while (value > 0);
  return Buffer.from(out);
}

if (bytes.readUInt32LE(0) !== 0x6d736100) {
  console.error(`${input}: not a WebAssembly module`);
  process.exit(1);
}
const parts = [bytes.subarray(0, 8)];
const dropped = [];
let at = 8;
while (at < bytes.length) {
  const start = at;
  const id = bytes[at++];
  let size;
  [size, at] = leb(at);
  const end = at + size;
  if (id !== 7) {
    parts.push(bytes.subarray(start, end));
    at = end;
    continue;
  }
  let count;
  let p;
  [count, p] = leb(at);
  const kept = [];
  for (let i = 0; i < count; i++) {
    const entry = p;
    let length;
    [length, p] = leb(p);
    const name = bytes.subarray(p, p + length).toString("utf8");
    p += length + 1; // the name, then the export's kind
    [, p] = leb(p); // its index
    if (UNUSED.test(name)) dropped.push(name);
    else kept.push(bytes.subarray(entry, p));
  }
  const body = Buffer.concat([encode(kept.length), ...kept]);
  parts.push(Buffer.from([7]), encode(body.length), body);
  at = end;
}
writeFileSync(output, Buffer.concat(parts));
console.error(`strip-exports: ${dropped.length} unused class exports dropped from ${input}`);
