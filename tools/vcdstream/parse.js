'use strict';
// parse.js FILE.vcd: read a VCD with vcd-stream's WebAssembly parser and print
// {vars: [{path, width, code}], changes: [[code, time, value]]} as JSON, with
// values normalized like aaemu's reader: full-width strings of 0 1 x z.
const fs = require('fs');
// The WebAssembly build ships in the package; the package's index would also
// load a native addon that needs a compiler, so require the two parts directly.
const createVCD = require('vcd-stream/out/vcd.js');
const webVcdParser = require('vcd-stream/lib/web-vcd-parser.js');

const scalar = {14: '0', 15: '1', 16: 'x', 17: 'x', 18: 'z', 19: 'z'};

function bitsOf(width, value, mask) {
  let s = '';
  for (let i = width - 1; i >= 0; i--) {
    const b = BigInt(i);
    const v = (value >> b) & 1n;
    const m = (mask >> b) & 1n;
    s += m ? (v ? 'z' : 'x') : (v ? '1' : '0');
  }
  return s;
}

(async () => {
  const wasm = await createVCD();
  const inst = await webVcdParser(wasm);
  const widths = {};
  const vars = [];
  const walk = (node, prefix) => {
    for (const n of node.body) {
      if (n.kind === 'scope') {
        walk(n, prefix.concat([n.name]));
      } else {
        vars.push({path: prefix.concat([n.name]).join('.'), width: n.size, code: n.link});
        widths[n.link] = n.size;
      }
    }
  };
  const changes = [];
  inst.change.any((code, time, cmd, value, mask) => {
    let v;
    if (cmd in scalar) {
      v = scalar[cmd];
      if (widths[code] > 1) {
        v = v.padStart(widths[code], v === '1' ? '0' : v);
      }
    } else {
      v = bitsOf(widths[code], value, mask);
    }
    changes.push([code, Number(time), v]);
  });
  inst.on('$enddefinitions', () => walk(inst.info.wires, []));
  inst.on('finish', () => {
    process.stdout.write(JSON.stringify({vars, changes}) + '\n');
  });
  inst.write(fs.readFileSync(process.argv[2]));
  inst.end();
})().catch(e => { console.error(e); process.exit(1); });
