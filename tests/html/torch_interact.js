// Drives a PyTorch report page (tests/html/browser_test.sh appends it to a copy of the page, with
// the page's CSP nonce) and checks what issue 37's user saw wrong, against the page's own data:
//  - the tensor timeline's panel shows, at the last OOM, PyTorch's allocated at that failure (the
//    figure of its OutOfMemoryError), and a click on each OOM's marker shows that OOM's;
//  - the flame graph in "user frames" has no row of a frame the analyzer marked machinery
//    (interpreter, ctypes, libffi) or library, and "all frames" brings them back;
//  - the OOM cards: the last failure first and open, the others folded;
//  - the fragmentation section counts PyTorch's cache flushes as the text report does.
// The outcome: body[data-vt-torch] = "ok" or "fail: <what failed>".
'use strict';
(function torchInteract() {
  const failed = [];
  const check = (what, ok) => {
    if (!ok) failed.push(what);
  };
  try {
    const R = VT.data;
    const ooms = R.ooms.filter((o) => o.torch);
    // The panel under the tensor chart starts at the device's last OOM.
    const panel = document.querySelector('.tensor-state h4');
    if (ooms.length) {
      const last = ooms[ooms.length - 1].torch;
      check('the tensor panel shows the last OOM\'s allocated (' + fmtBytes(last.allocated_bytes) + ')',
          panel && panel.textContent.includes(': ' + fmtBytes(last.allocated_bytes) + ' allocated, at OOM #' + R.ooms.length));
      // A click on each OOM's marker: that OOM's state.
      const svg = document.querySelector('svg.tensor-chart');
      const markers = [...svg.querySelectorAll('line.tensor-oom')];
      check('one marker per OOM on the tensor chart', markers.length === ooms.length);
      markers.forEach((m, i) => {
        const r = svg.getBoundingClientRect();
        const x = r.left + Number(m.getAttribute('x1')) / 1000 * r.width;
        svg.dispatchEvent(new MouseEvent('click', {bubbles: true, clientX: x, clientY: r.top + r.height / 2}));
        const h = document.querySelector('.tensor-state h4').textContent;
        check('a click on OOM marker ' + (i + 1) + ' shows its allocated (' + fmtBytes(ooms[i].torch.allocated_bytes) + '): ' + h,
            h.includes(': ' + fmtBytes(ooms[i].torch.allocated_bytes) + ' allocated, at OOM #' + (i + 1)));
      });
    } else {
      check('the tensor panel shows the allocated peak', panel && /at the allocated peak/.test(panel.textContent));
    }

    // The flame graph: rows, and the labels of frames the user's view leaves out.
    const peak = R.peak.by_device[0];
    const hidden = new Set();
    for (const g of peak.live_set) for (const f of g.stack || []) if (f.machinery || f.library) hidden.add(frameShort(f));
    const labels = () => [...document.querySelectorAll('svg.icicle g.node text')].map((t) => t.textContent);
    const rows = () => new Set([...document.querySelectorAll('svg.icicle g.node')].map((g) => g.getAttribute('transform').split(',')[1])).size;
    const shown = labels().filter((l) => hidden.has(l.replace(/\u2026$/, '')) || [...hidden].some((h) => l.endsWith('\u2026') && h.startsWith(l.slice(0, -1))));
    check('user frames: no machinery or library frame in the flame graph (' + shown.slice(0, 3).join(' | ') + ')', hidden.size && !shown.length);
    const want = 1 + Math.max(...peak.live_set.map((g) => icicleFrames(g.stack || [], false).length));
    check('user frames: one row per user frame (' + rows() + ' rows, ' + want + ' expected)', rows() === want);
    const userRows = rows();
    [...document.querySelectorAll('.frames-switch button')].find((b) => b.textContent === 'all frames').click();
    check('all frames: more rows', rows() > userRows);
    check('all frames: the machinery frames are drawn', labels().some((l) => hidden.has(l)));
    [...document.querySelectorAll('.frames-switch button')].find((b) => b.textContent === 'user frames').click();
    check('back to user frames', rows() === userRows);

    // The OOM cards: the last failure first and open.
    const cards = [...document.querySelectorAll('details.oom')];
    if (R.ooms.length > 1) {
      check('the first card is the last OOM', cards[0].id === 'oom-0-' + (R.ooms.length - 1) && cards[0].open);
      check('it says it is the last failure', !!cards[0].querySelector('.oom-last'));
      check('the other cards are folded', cards.slice(1).every((c) => !c.open));
    }

    // Cache flushes: what the text report's FRAGMENTATION section says, the page says.
    const frag = document.querySelector('section[id^="frag-"]').textContent;
    const retries = R.torch.marks.reduce((m, k) => Math.max(m, k.alloc_retries || 0), 0);
    if (retries) check('the fragmentation section does not say there was no cache flush', !/no VMM reservations, pools, cache flushes/.test(frag));
    document.body.dataset.vtTorchRetries = String(retries);
  } catch (e) {
    failed.push('exception: ' + ((e && e.stack) || e));
  }
  document.body.setAttribute('data-vt-torch', failed.length ? 'fail: ' + failed.join('; ') : 'ok');
})();
