// Entry point: reads the embedded data and renders a trace or a job; the page's status
// attribute (data-vt-status: ok or error) tells tests that the script ran to the end.
'use strict';

(function main() {
  try {
    VT.data = loadData();
    const root = clear(document.getElementById('vt-app'));
    // Stacks: the user's frames (Python first, as the text report) or every frame; a class on
    // body switches them (every frame is in the page, no redraw).
    const userBtn = el('button', {type: 'button', class: 'active'}, 'user frames');
    const allBtn = el('button', {type: 'button'}, 'all frames');
    const setAll = (all) => {
      document.body.classList.toggle('vt-all-frames', all);
      if (frameMode.all !== all) {
        frameMode.all = all;
        frameMode.listeners.forEach((f) => f());
      }
      userBtn.classList.toggle('active', !all);
      allBtn.classList.toggle('active', all);
    };
    userBtn.addEventListener('click', () => setAll(false));
    allBtn.addEventListener('click', () => setAll(true));
    const title = el('div', {class: 'topbar'}, el('span', {class: 'brand'}, 'vramtrace'),
        el('span', {class: 'topbar-sub'}, isJob(VT.data) ? 'job report' : 'memory report'),
        el('span', {class: 'frames-switch', title: 'stacks: Python and user frames first, or every native frame'},
            'stacks: ', userBtn, allBtn));
    root.appendChild(title);
    if (isJob(VT.data)) renderJob(VT.data, root);
    else renderTrace(traceContext(VT.data, '', 0), root);
    // A link to a section (report.html#oom-0) works although the sections are built here.
    let target = null;
    try {
      target = location.hash && document.getElementById(decodeURIComponent(location.hash.slice(1)));
    } catch (e) {
      target = null;  // a malformed fragment
    }
    if (target) target.scrollIntoView();
  } catch (e) {
    vtFail((e && e.stack) || e);
  }
  if (!vtErrors.length) document.body.setAttribute('data-vt-status', 'ok');
})();
