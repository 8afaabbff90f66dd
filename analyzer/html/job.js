// A job (a directory of traces): the peak spread across ranks, the per-rank table (peak, leaks,
// OOMs, verdict, peak relative to the mean), and one rank's full report at a time below it.
'use strict';

// d: the job report JSON ({job, ranks, problems, reports}); reports[i] is rank row i's report,
// null when the page does not embed it.
function renderJob(d, root) {
  const j = d.job;
  const embedded = d.reports.filter((r) => r).length;
  root.appendChild(el('header', {class: 'card trace-header'},
      el('h2', null, 'Job: ' + plural(j.traces, 'trace')),
      el('div', {class: 'stats'}, [
        ['max peak', fmtBytes(j.max_peak_bytes)], ['min peak', fmtBytes(j.min_peak_bytes)], ['mean peak', fmtBytes(j.mean_peak_bytes)],
        ['imbalance (max / mean)', Number(j.imbalance).toFixed(2)],
        ['ranks with OOMs', String(d.ranks.filter((r) => r.ooms > 0).length)],
      ].map(([k, v]) => el('div', {class: 'stat'}, el('div', {class: 'stat-label'}, k), el('div', {class: 'stat-value'}, v))))));

  // Damaged or unreadable traces of the directory (the figures of a damaged one are lower bounds).
  const problems = d.problems || [];
  if (problems.length) {
    root.appendChild(el('section', {class: 'card'}, el('h2', null, 'Problems'),
        el('ul', {class: 'problems'}, problems.map((p) => el('li', null, el('code', null, p.path), ' ' + p.kind + ': ' + p.message)))));
  }

  const detail = el('div', {id: 'rank-detail'});
  const rows = [];
  const select = (i) => {
    rows.forEach((r, k) => r.classList.toggle('selected', k === i));
    clear(detail);
    const r = d.ranks[i];
    detail.appendChild(el('h2', {class: 'rank-title'}, r.rank >= 0 ? 'Rank ' + r.rank + ' (pid ' + r.pid + ')' : 'Process ' + r.pid));
    const report = d.reports[i];
    if (!report) {
      detail.appendChild(el('p', {class: 'none'}, 'This rank\u2019s details are not embedded (the page keeps the ' +
          embedded + ' ranks with OOMs or the highest peaks); run vramtrace report on its trace: ', el('code', null, r.path)));
      return;
    }
    renderTrace(traceContext(report, '/reports/' + i, i), detail);
  };
  const table = el('table', {class: 'groups ranks'},
      el('thead', null, el('tr', null, ['rank', 'pid', 'host', 'peak', 'peak / mean', 'leaks', 'OOMs', 'end', 'verdict', 'command', 'trace'].map((h) => el('th', null, h)))));
  const body = el('tbody');
  d.ranks.forEach((r, i) => {
    const rel = j.mean_peak_bytes ? r.peak_bytes / j.mean_peak_bytes : 0;
    const killed = !r.damaged && r.end === 'killed';
    const tr = el('tr', {class: 'clickable' + (r.ooms ? ' has-oom' : '') + (killed ? ' killed' : ''), tabindex: 0, onclick: () => select(i),
      onkeydown: (ev) => {
        if (ev.key === 'Enter') select(i);
      }},
    el('td', {class: 'num'}, r.rank >= 0 ? String(r.rank) : '-'), el('td', {class: 'num'}, String(r.pid)), el('td', null, r.host),
    el('td', {class: 'num'}, fmtBytes(r.peak_bytes)),
    el('td', {class: 'share'}, shareBar(j.max_peak_bytes ? r.peak_bytes / j.max_peak_bytes : 0, rel > 1.1 ? 'hot' : ''), ' ', rel.toFixed(2)),
    el('td', {class: 'num'}, fmtBytes(r.leak_bytes)), el('td', {class: 'num'}, String(r.ooms)),
    el('td', null, killed ? el('span', {class: 'killed-tag', title: 'no clean close: a signal, a crash, or an exec before exit handlers ran'},
        'KILLED') : r.damaged ? '?' : r.end === 'running' ? 'running' : 'exit'),
    el('td', null, r.verdict ? el('span', {class: 'verdict-code small'}, r.verdict) : ''),
    el('td', {class: 'command', title: r.command || ''}, r.command || ''),
    el('td', {class: 'path'}, basename(r.path)));
    rows.push(tr);
    body.appendChild(tr);
  });
  table.appendChild(body);
  root.appendChild(el('section', {class: 'card'}, el('h2', null, 'Ranks'),
      el('p', {class: 'sub'}, 'Click a rank for its report. The bar is the rank\u2019s peak against the highest.'), table));
  root.appendChild(detail);
  if (d.ranks.length) {
    // Start with the rank most worth reading: the first with an OOM, else the highest peak.
    let first = d.ranks.findIndex((r, i) => r.ooms > 0 && d.reports[i]);
    if (first < 0) first = d.ranks.reduce((best, r, i) => (r.peak_bytes > d.ranks[best].peak_bytes ? i : best), 0);
    select(first);
  }
}
