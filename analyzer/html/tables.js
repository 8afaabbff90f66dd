// Reusable tables: groups of memory by call site (with the full stack on demand), stacks,
// figure lists and share bars.
'use strict';

function shareBar(x, cls) {
  const w = Math.max(0, Math.min(1, Number(x) || 0)) * 100;
  return el('span', {class: 'bar ' + (cls || '')}, el('span', {class: 'bar-fill', style: 'width:' + w.toFixed(1) + '%'}));
}

// A stack, innermost first (as the text report), in an ordered list; `cut` outer frames were left
// out of the page (its limit on frames per stack).
function stackList(stack, max, cut) {
  stack = stack || [];
  const list = el('ol', {class: 'stack'});
  // Every frame is in the list; those the user's view leaves out are marked `folded`, and the
  // page's switch (body.vt-all-frames) shows them or one "... N native frames" line instead.
  const user = new Set(userFrames(stack));
  const shown = stack.slice(0, max || stack.length);
  let hidden = 0;
  for (const f of shown) {
    const where = frameWhere(f);
    const folded = !user.has(f);
    hidden += folded ? 1 : 0;
    list.appendChild(el('li', {class: (f.python ? 'py' : '') + (folded ? ' folded' : '')},
        el('span', {class: 'fn'}, frameName(f)), where ? el('span', {class: 'where'}, where) : null));
  }
  if (hidden) list.appendChild(el('li', {class: 'more fold-marker'}, '\u2026 ' + plural(hidden, 'native frame') +
      ' (\u201call frames\u201d shows them)'));
  if (stack.length > shown.length) list.appendChild(el('li', {class: 'more'}, '\u2026 ' + (stack.length - shown.length) + ' more frames'));
  if (cut) list.appendChild(el('li', {class: 'more'}, '(' + plural(cut, 'outer frame') + ' not shown)'));
  if (!stack.length) list.appendChild(el('li', {class: 'more'}, '(no stack recorded)'));
  return list;
}

// The site of a group in one line, and its whole stack when opened.
function siteCell(stack, label, cut) {
  const frames = (stack || []).length + cut;
  return el('details', {class: 'site-details'},
      el('summary', null, el('span', {class: 'site'}, label || siteLabel(stack)), el('span', {class: 'nframes'}, ' ' + plural(frames, 'frame'))),
      stackList(stack, 0, cut));
}

// A list of Groups (or Growths, opts.growth: growth columns) of the report at `path` in ctx's
// A bucket name in words, as the text report says it.
function memoryKind(k) {
  return {device: 'device memory', pinned_host: 'pinned host memory', managed: 'managed memory', imported: 'imported memory'}[k] || k;
}

// report: [{bytes, count, share, kind, device, stack}, ...]; what the page's limits cut from it
// is summed up in a last row.
function groupsTable(ctx, list, path, opts) {
  opts = opts || {};
  list = list || [];
  const more = ctx.omitted(path);
  if (!list.length && !more) return el('p', {class: 'none'}, opts.empty || '(none)');
  // Growth rows carry a site's highest live bytes and its rise, not a count or a share.
  const head = opts.growth ? ['#', 'highest', 'grew by', 'new highs (checkpoints)', 'from \u2192 to', 'memory', 'GPU'] :
    ['#', 'bytes', 'allocations', opts.shareLabel || 'share', 'memory', 'GPU'];
  const threads = list.some((g) => g.threads && g.threads.length);  // (only when several threads allocated)
  if (threads) head.push(opts.growth ? 'grew on' : 'allocated on');
  head.push('allocated at (click for the stack)');
  const table = el('table', {class: 'groups' + (opts.cls ? ' ' + opts.cls : '')},
      el('thead', null, el('tr', null, head.map((h) => el('th', null, h)))));
  const body = el('tbody');
  const labels = siteLabels(list.map((g) => g.stack));
  list.forEach((g, i) => {
    const cells = [el('td', {class: 'num'}, String(i + 1)), el('td', {class: 'num'}, fmtBytes(g.bytes))];
    if (opts.growth) {
      cells.push(el('td', {class: 'num'}, '+' + fmtBytes(g.growth_bytes)), el('td', {class: 'num'}, String(g.new_highs)),
          el('td', {class: 'num'}, fmtSecs(ctx.rel(g.first_t_ns)) + ' \u2192 ' + fmtSecs(ctx.rel(g.last_t_ns))));
    } else {
      cells.push(el('td', {class: 'num'}, fmtCount(g.count)), el('td', {class: 'share'}, shareBar(g.share), ' ', fmtPct(g.share)));
    }
    cells.push(el('td', null, memoryKind(g.kind)), el('td', {class: 'num'}, g.device >= 0 ? String(g.device) : '-'));
    if (threads) cells.push(el('td', null, threadsText(g.threads, g.threads_at_site)));
    cells.push(el('td', {class: 'site-cell'}, siteCell(g.stack, labels[i], omittedEntries(ctx, path + '/' + i + '/stack'))));
    body.appendChild(el('tr', null, cells));
  });
  if (more && more.entries) {
    const what = more.bytes !== undefined ? ': ' + fmtBytes(more.bytes) + (more.count !== undefined ? ' in ' + plural(more.count, 'allocation') : '') : '';
    body.appendChild(el('tr', {class: 'more'}, el('td', {colspan: head.length},
        '\u2026 ' + plural(more.entries, 'more site') + what + ' (not embedded in this page; see vramtrace report --format json)')));
  }
  table.appendChild(body);
  return table;
}

// [[label, value], ...] as a two-column table.
function figures(rows, cls) {
  return el('table', {class: 'figures ' + (cls || '')},
      el('tbody', null, rows.filter((r) => r).map(([k, v]) => el('tr', null, el('th', null, k), el('td', null, v)))));
}

// A horizontal bar of parts of a whole: [{label, bytes, cls}], with a legend.
function partsBar(parts, total, extra) {
  const bar = el('div', {class: 'parts'});
  for (const p of parts) {
    if (!p.bytes) continue;
    const w = Math.min(100, p.bytes / Math.max(1, total) * 100);
    const seg = el('span', {class: 'part ' + p.cls, style: 'width:' + w.toFixed(2) + '%'});
    seg.addEventListener('mousemove', (ev) => tip.show(ev, p.label, [['bytes', fmtBytes(p.bytes)], ['share', fmtPct(p.bytes / Math.max(1, total))]]));
    seg.addEventListener('mouseleave', () => tip.hide());
    bar.appendChild(seg);
  }
  const legend = el('div', {class: 'legend'}, parts.filter((p) => p.bytes || p.always).map((p) =>
    el('span', {class: 'key part-key ' + p.cls}, p.label + ' ' + fmtBytes(p.bytes))));
  return el('div', {class: 'parts-box'}, bar, extra || null, legend);
}
