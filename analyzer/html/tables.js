// Reusable tables: groups of memory by call site (with the full stack on demand), stacks,
// figure lists and share bars.
'use strict';

function shareBar(x, cls) {
  const w = Math.max(0, Math.min(1, Number(x) || 0)) * 100;
  return el('span', {class: 'bar ' + (cls || '')}, el('span', {class: 'bar-fill', style: 'width:' + w.toFixed(1) + '%'}));
}

// A stack, innermost first (as the text report), in an ordered list. Every frame is in the list;
// those the user's view leaves out are marked, and the page's switch (body.vt-all-frames) shows
// them or one "... N native frames" line in their place.
function stackList(stack, max) {
  const list = el('ol', {class: 'stack'});
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
  if (!stack.length) list.appendChild(el('li', {class: 'more'}, '(no stack recorded)'));
  return list;
}

// The site of a group in one line, and its whole stack when opened.
function siteCell(stackIndex, label) {
  const stack = stackOf(stackIndex);
  return el('details', {class: 'site-details'},
      el('summary', null, el('span', {class: 'site'}, label || siteLabel(stackIndex)), el('span', {class: 'nframes'}, ' ' + plural(stack.length, 'frame'))),
      stackList(stack));
}

// groups: {list: [{b, n, sh, k, d, s}], more: {sites, b, n}}; opts.growth adds growth columns.
function groupsTable(groups, opts) {
  opts = opts || {};
  const list = groups.list || groups;
  if (!list.length) return el('p', {class: 'none'}, opts.empty || '(none)');
  // Growth rows carry a site's highest live bytes and its rise, not a count or a share.
  const head = opts.growth ? ['#', 'highest', 'grew by', 'new highs', 'from \u2192 to', 'kind', 'device'] :
    ['#', 'bytes', 'allocations', opts.shareLabel || 'share', 'kind', 'device'];
  head.push('allocated at (click for the stack)');
  const table = el('table', {class: 'groups' + (opts.cls ? ' ' + opts.cls : '')},
      el('thead', null, el('tr', null, head.map((h) => el('th', null, h)))));
  const body = el('tbody');
  const labels = siteLabels(list.map((g) => g.s));
  list.forEach((g, i) => {
    const cells = [el('td', {class: 'num'}, String(i + 1)), el('td', {class: 'num'}, fmtBytes(g.b))];
    if (opts.growth) {
      cells.push(el('td', {class: 'num'}, '+' + fmtBytes(g.gb)), el('td', {class: 'num'}, String(g.nh)),
          el('td', {class: 'num'}, fmtSecs(g.t0) + ' \u2192 ' + fmtSecs(g.t1)));
    } else {
      cells.push(el('td', {class: 'num'}, fmtCount(g.n)), el('td', {class: 'share'}, shareBar(g.sh), ' ', fmtPct(g.sh)));
    }
    cells.push(el('td', null, g.k), el('td', {class: 'num'}, g.d >= 0 ? String(g.d) : '-'),
        el('td', {class: 'site-cell'}, siteCell(g.s, labels[i])));
    body.appendChild(el('tr', null, cells));
  });
  const more = groups.more;
  if (more && more.sites) {
    body.appendChild(el('tr', {class: 'more'}, el('td', {colspan: head.length},
        '\u2026 ' + plural(more.sites, 'more site') + ': ' + fmtBytes(more.b) + ' in ' + plural(more.n, 'allocation') +
        ' (not embedded in this page; see vramtrace report --format json)')));
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
