// The peak as an icicle graph: the root is all live device memory at the peak, its children
// the outermost frames, down to the allocating (innermost) frames; width = bytes. Inverted
// (bottom-up, a button away): the allocating frames first, their callers below them, so one
// allocation function called from everywhere is one wide node. With the page's "user frames"
// switch (the default) only the user's own frames are rows (icicleFrames); "all frames" shows
// every native frame too. Hover for the frame and its share, click to zoom into a node (click an
// ancestor to zoom back out), search to highlight frames. The tree is capped at ICICLE_CAP nodes: a stack that would add
// more ends in its parent's "other" node, so widths still add up.
'use strict';

const ICICLE_CAP = 3000;
const ROW = 20;

// The frames of a stack the flame graph draws, innermost first. With `all`, every frame. Else
// the user's own code, by the flags the analyzer puts on each frame (analyzer/read/user_frames.h:
// `library` on a Python frame of site-packages/dist-packages, torch's included, or the standard
// library; `machinery` on the interpreter, ctypes/libffi, pybind11, torch's dispatcher, libc):
// the Python frames that are not a library's; without any, the stack as the stack lists show it
// (userFrames: every Python frame, else the native frames that are not machinery, else all).
function icicleFrames(stack, all) {
  if (all) return stack;
  const own = stack.filter((f) => f.python && !f.library);
  return own.length ? own : userFrames(stack);
}

// peak: a device's entry of the report's peak.by_device; `path` the JSON pointer of its live_set.
function icicleTree(ctx, peak, path, inverted, all) {
  const root = {label: 'all device memory at the peak (GPU ' + peak.device + ')', bytes: peak.bytes, kids: [],
    map: new Map(), frame: null, parent: null, depth: 0, kind: 'root'};
  let nodes = 1, maxDepth = 0;
  const child = (parent, key, make) => {
    let n = parent.map.get(key);
    if (!n) {
      n = make();
      n.kids = [];
      n.map = new Map();
      n.parent = parent;
      n.depth = parent.depth + 1;
      n.bytes = 0;
      maxDepth = Math.max(maxDepth, n.depth);
      parent.map.set(key, n);
      parent.kids.push(n);
      nodes++;
    }
    return n;
  };
  const other = (parent) => child(parent, '\u0000other', () => ({label: 'other (graph size limit)', frame: null, kind: 'other'}));
  let listed = 0;
  peak.live_set.forEach((g, i) => {
    listed += g.bytes;
    const frames = icicleFrames(g.stack || [], all);
    let node = root;
    if (!frames.length) {
      node = child(root, '\u0000nostack', () => ({label: '(no stack recorded)', frame: null, kind: 'other'}));
      node.bytes += g.bytes;
      return;
    }
    // A stack the page cut keeps its innermost frames: what is above them is one node (the
    // outermost: the first level, or the last when inverted).
    const cut = omittedEntries(ctx, path + '/' + i + '/stack');
    const cutNode = (parent) => {
      const n = child(parent, '\u0000cut' + cut, () => ({label: '(' + plural(cut, 'outer frame') + ' not shown)', frame: null, kind: 'other'}));
      n.bytes += g.bytes;
      return n;
    };
    if (cut && !inverted) node = cutNode(root);
    const order = inverted ? frames.map((f, j) => j) : frames.map((f, j) => frames.length - 1 - j);
    for (let capped = false, o = 0; o < order.length && !capped; o++) {
      const f = frames[order[o]];
      // Same function and line = same node; without a source line, the address tells frames apart.
      const key = f.function + '\u0000' + f.file + '\u0000' + f.line + '\u0000' + f.module + '\u0000' + !!f.inlined +
          (f.file ? '' : '\u0000' + f.offset);
      if (!node.map.has(key) && nodes >= ICICLE_CAP) {
        node = other(node);
        node.bytes += g.bytes;
        capped = true;
        continue;
      }
      node = child(node, key, () => ({label: frameShort(f), frame: f, kind: 'frame'}));
      node.bytes += g.bytes;
      if (inverted && cut && o === order.length - 1) cutNode(node);
    }
  });
  if (peak.bytes > listed) {
    const n = child(root, '\u0000beyond', () => ({label: 'other sites (beyond --top)', frame: null, kind: 'other'}));
    n.bytes += peak.bytes - listed;
  }
  const sortKids = (n) => {
    n.kids.sort((a, b) => b.bytes - a.bytes);
    n.kids.forEach(sortKids);
  };
  sortKids(root);
  return {root, nodes, maxDepth};
}

function icicle(ctx, peak, path) {
  let inverted = false, root, nodes, maxDepth, H;
  const holder = el('div', {class: 'chart icicle-holder'});
  const svg = svgEl('svg', {class: 'icicle', role: 'img', 'aria-label': 'peak breakdown by call stack'});
  holder.appendChild(svg);
  const build = () => {
    ({root, nodes, maxDepth} = icicleTree(ctx, peak, path, inverted, frameMode.all));
    H = (maxDepth + 1) * ROW + 2;
    svg.setAttribute('height', H);
  };
  build();
  let focus = root, query = '', W = 1000;
  const crumbs = el('div', {class: 'crumbs'});
  const found = el('span', {class: 'found'});

  function matches(n) {
    return query && n.label.toLowerCase().includes(query);
  }
  function matchedBytes(n) {
    if (matches(n)) return n.bytes;
    return n.kids.reduce((s, k) => s + matchedBytes(k), 0);
  }
  function tipLines(n) {
    const lines = [];
    if (n.frame) {
      const w = frameWhere(n.frame);
      if (w) lines.push(['at', w]);
      if (n.frame.module && n.frame.module !== 'python') lines.push(['module', n.frame.module]);
    }
    lines.push(['bytes', fmtBytes(n.bytes)]);
    lines.push(['share of the peak', fmtPct(n.bytes / Math.max(1, root.bytes))]);
    if (focus !== root) lines.push(['share of ' + (focus.frame ? shortFn(focus.frame.function) : focus.label), fmtPct(n.bytes / Math.max(1, focus.bytes))]);
    lines.push('click to zoom');
    return lines;
  }
  function rect(n, x, w) {
    const g = svgEl('g', {class: 'node' + (matches(n) ? ' match' : '') + (n === focus ? ' focus' : ''),
      transform: 'translate(' + x.toFixed(2) + ',' + (n.depth * ROW) + ')'});
    const fill = n.kind === 'root' ? '#9aa5b1' : n.kind === 'other' ? '#c9c9c9' : frameColor(n.frame);
    g.appendChild(svgEl('rect', {width: Math.max(0.5, w - 0.5).toFixed(2), height: ROW - 1, fill}));
    const chars = Math.floor((w - 8) / 6.6);
    if (chars >= 3) {
      const text = n.label.length > chars ? n.label.slice(0, chars - 1) + '\u2026' : n.label;
      g.appendChild(svgEl('text', {x: 4, y: 14}, text));
    }
    g.addEventListener('mousemove', (ev) => tip.show(ev, n.frame ? frameName(n.frame) : n.label, tipLines(n)));
    g.addEventListener('mouseleave', () => tip.hide());
    g.addEventListener('click', () => {
      focus = n === focus && n.parent ? n.parent : n;
      draw();
    });
    svg.appendChild(g);
  }
  function drawKids(n, x, w) {
    let cx = x;
    for (const k of n.kids) {
      const kw = n.bytes ? w * k.bytes / n.bytes : 0;
      if (kw >= 0.3) {
        rect(k, cx, kw);
        drawKids(k, cx, kw);
      }
      cx += kw;
    }
  }
  function draw() {
    W = Math.max(640, holder.clientWidth || 1100);
    svg.setAttribute('width', W);
    svg.setAttribute('viewBox', '0 0 ' + W + ' ' + H);
    clear(svg);
    for (let a = focus; a; a = a.parent) rect(a, 0, W);  // the path to the focus, full width
    drawKids(focus, 0, W);
    clear(crumbs);
    const path = [];
    for (let a = focus; a; a = a.parent) path.unshift(a);
    path.forEach((a, i) => {
      if (i) crumbs.appendChild(document.createTextNode(' \u203a '));
      crumbs.appendChild(el('button', {type: 'button', class: 'crumb', onclick: () => {
        focus = a;
        draw();
      }}, a.frame ? shortFn(a.frame.function) : a.label));
    });
    found.textContent = query ? 'matched: ' + fmtBytes(matchedBytes(root)) + ' (' +
        fmtPct(matchedBytes(root) / Math.max(1, root.bytes)) + ' of the peak)' : '';
  }
  const search = el('input', {type: 'search', placeholder: 'highlight frames (function or file)', class: 'search'});
  search.addEventListener('input', () => {
    query = search.value.trim().toLowerCase();
    draw();
  });
  const hint = el('span', {class: 'hint'});
  const sayHint = () => {
    hint.textContent = (frameMode.all ? 'every frame' : 'the user\u2019s own frames (\u201call frames\u201d at the top shows every frame)') + '; ' +
        (inverted ? 'allocating frames at the top, their callers below' : 'outermost frames at the top, allocating frames at the bottom') +
        '; width = bytes; click to zoom' + (nodes >= ICICLE_CAP ? '; graph capped at ' + ICICLE_CAP + ' nodes' : '');
  };
  const flip = el('button', {type: 'button', class: 'invert'}, 'inverted (bottom-up)');
  flip.addEventListener('click', () => {
    inverted = !inverted;
    flip.textContent = inverted ? 'top-down' : 'inverted (bottom-up)';
    flip.classList.toggle('active', inverted);
    build();
    focus = root;
    sayHint();
    draw();
  });
  sayHint();
  // The page's frames switch: the graph is built again from the frames it now shows.
  frameMode.listeners.push(() => {
    build();
    focus = root;
    sayHint();
    draw();
  });
  const box = el('div', {class: 'icicle-box'},
      el('div', {class: 'chart-tools'}, search, flip, found, hint),
      crumbs, holder);
  box.vtDraw = draw;
  redrawers.push(draw);
  return box;
}
