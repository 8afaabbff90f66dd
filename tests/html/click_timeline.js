// For the screenshot of a timeline click (tests/html/browser_test.sh -> docs/timeline-click.png):
// clicks the first device's timeline at 60% of its width and opens the first stack of the live set
// shown (the test takes a tall screenshot, so that the panel below the chart is in it).
'use strict';
(function clickTimeline() {
  const svg = document.querySelector('svg.timeline');
  const r = svg.getBoundingClientRect();
  const at = {bubbles: true, cancelable: true, clientX: r.left + r.width * 0.6, clientY: r.top + r.height * 0.5};
  svg.dispatchEvent(new MouseEvent('mousedown', at));
  window.dispatchEvent(new MouseEvent('mouseup'));
  svg.dispatchEvent(new MouseEvent('click', at));
  const first = svg.closest('.timeline-box').querySelector('.snapshot details');
  if (first) first.open = true;
})();
