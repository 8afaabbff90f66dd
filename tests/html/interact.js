// Drives a rendered report like a person would (tests/html/browser_test.sh appends it to a copy
// of the page, with the page's CSP nonce): zooms and hovers the timeline, zooms and searches
// the icicle, opens a stack, picks another rank of a job. The outcome goes into the DOM as
// body[data-vt-interact] = "ok" or "fail: <what failed>", read back from --dump-dom.
'use strict';
(function interact() {
  const failed = [];
  const check = (what, ok) => {
    if (!ok) failed.push(what);
  };
  const mouse = (node, type, fx, fy) => {
    const r = node.getBoundingClientRect();
    node.dispatchEvent(new MouseEvent(type, {bubbles: true, cancelable: true, clientX: r.left + r.width * fx,
      clientY: r.top + r.height * fy}));
  };
  try {
    const svg = document.querySelector('svg.timeline');
    const labels = () => [...svg.querySelectorAll('.axes text')].map((t) => t.textContent).join('|');
    const before = labels();
    const r = svg.getBoundingClientRect();
    for (let i = 0; i < 4; i++) {
      svg.dispatchEvent(new WheelEvent('wheel', {deltaY: -120, bubbles: true, cancelable: true,
        clientX: r.left + r.width * 0.4, clientY: r.top + r.height * 0.5}));
    }
    check('the wheel zooms the timeline', labels() !== before);
    mouse(svg, 'mousedown', 0.4, 0.5);
    mouse(svg, 'mousemove', 0.3, 0.5);
    window.dispatchEvent(new MouseEvent('mouseup'));
    mouse(svg, 'dblclick', 0.5, 0.5);
    check('a double click resets the zoom', labels() === before);
    mouse(svg, 'mousemove', 0.5, 0.5);
    check('hovering the timeline shows a tooltip', !document.getElementById('vt-tip').hidden);
    mouse(svg, 'mouseleave', 0.5, 0.5);
    // A click on the plot: what was live then (a mousedown and a click at the same point).
    mouse(svg, 'mousedown', 0.45, 0.5);
    window.dispatchEvent(new MouseEvent('mouseup'));
    mouse(svg, 'click', 0.45, 0.5);
    const snap = document.querySelector('.timeline-box .snapshot');
    check('a click on the timeline shows what was live then', snap && !snap.hidden &&
        /^(Live at|Nothing was live)/.test((snap.querySelector('h4') || {}).textContent || ''));
    check('the click names the --at command for the whole live set',
        snap && /vramtrace report .* --at [0-9.]+m?s$/.test((snap.querySelector('code') || {}).textContent || ''));
    check('the snapshot lists call sites', snap && snap.querySelectorAll('tbody tr').length > 0);
    document.body.dataset.vtSnapshot = snap ? snap.querySelector('h4').textContent : '';

    // The root's largest child: the first node of the second row.
    const nodes = [...document.querySelectorAll('svg.icicle g.node')];
    const child = nodes.find((g) => /,20\)$/.test(g.getAttribute('transform'))) || nodes[nodes.length - 1];
    child.dispatchEvent(new MouseEvent('click', {bubbles: true}));
    check('a click zooms the icicle', document.querySelectorAll('.crumbs .crumb').length > 1);
    // The inverted (bottom-up) graph: allocating frames at the top.
    const rowLabels = () => [...document.querySelectorAll('svg.icicle g.node')].filter((g) => /,20\)$/.test(g.getAttribute('transform')))
        .map((g) => (g.querySelector('text') || {}).textContent || '').join('|');
    const topDown = rowLabels();
    const flip = document.querySelector('.icicle-box button.invert');
    flip.click();
    check('the inverted flame graph is drawn bottom-up', flip.classList.contains('active') &&
        /allocating frames at the top/.test(document.querySelector('.icicle-box .hint').textContent) && rowLabels() !== topDown);
    flip.click();
    check('the flame graph flips back top-down', !flip.classList.contains('active') &&
        /outermost frames at the top/.test(document.querySelector('.icicle-box .hint').textContent));
    const search = document.querySelector('.icicle-box input.search');
    const label = [...document.querySelectorAll('svg.icicle g.node text')].map((t) => t.textContent)
        .find((t, i) => i > 0 && t.length > 3);
    search.value = (label || 'x').slice(0, 3);
    search.dispatchEvent(new Event('input'));
    check('search highlights frames', document.querySelectorAll('svg.icicle g.node.match').length > 0);

    const details = document.querySelector('details.site-details');
    details.open = true;
    check('a site opens its stack', details.querySelectorAll('ol.stack li').length > 0);

    const rows = document.querySelectorAll('tr.clickable');
    if (rows.length > 1) {
      const other = [...rows].findIndex((row) => !row.classList.contains('selected'));
      rows[other].click();
      check('a click selects another rank', rows[other].classList.contains('selected'));
      check('the rank\'s report is shown', document.querySelectorAll('#rank-detail header.trace-header').length === 1);
    }
  } catch (e) {
    failed.push('exception: ' + ((e && e.stack) || e));
  }
  document.body.setAttribute('data-vt-interact', failed.length ? 'fail: ' + failed.join('; ') : 'ok');
})();
