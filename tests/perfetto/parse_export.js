// Loads a Perfetto export with V8's JSON.parse (the parser the trace viewers in Chromium and
// ui.perfetto.dev run on JSON traces) and resolves every event's "sf" to its full stack through
// the stackFrames parents, the way chrome://tracing's importer builds a stack.
// Usage: node parse_export.js EXPORT.json. Prints one line; exit 1 on any failure.
const fs = require("fs");
const doc = JSON.parse(fs.readFileSync(process.argv[2], "utf8"));
const frames = doc.stackFrames;
let resolved = 0, deepest = 0;
for (const e of doc.traceEvents) {
  if (e.sf === undefined) continue;
  let depth = 0;
  for (let k = e.sf; k !== undefined; k = frames[k].parent) {
    if (!(k in frames) || ++depth > 10000) {
      console.log(`parse_export: FAILED: sf ${e.sf} does not resolve`);
      process.exit(1);
    }
  }
  resolved++;
  deepest = Math.max(deepest, depth);
}
console.log(`parse_export: ok (${doc.traceEvents.length} events, ${resolved} stacks resolved, deepest ${deepest})`);
