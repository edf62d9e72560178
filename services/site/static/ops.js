// The operations dashboard: every 5 s, GET /api/ops/dashboard and draw inline-SVG plots — throughput
// per minute (lines), consumer lag over time (lines per processor), DLQ counts and trending queries
// (bars), searches served per day (bars) and the counter.

(() => {
  const NS = 'http://www.w3.org/2000/svg';
  const W = 600;
  const H = 200;
  const PAD = { l: 48, r: 10, t: 10, b: 28 };
  const COLORS = ['#1f6feb', '#e8590c', '#2f9e44', '#ae3ec9', '#f08c00', '#0c8599', '#c2255c'];

  function el(name, attrs, parent) {
    const e = document.createElementNS(NS, name);
    for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, String(v));
    if (parent) parent.appendChild(e);
    return e;
  }
  function text(parent, x, y, s, anchor = 'start') {
    const t = el('text', { x, y, 'text-anchor': anchor }, parent);
    t.textContent = s;
    return t;
  }
  function clear(svg) {
    while (svg.firstChild) svg.removeChild(svg.firstChild);
  }
  function axes(svg, max) {
    el('line', { x1: PAD.l, y1: H - PAD.b, x2: W - PAD.r, y2: H - PAD.b, stroke: '#c9d1dc' }, svg);
    el('line', { x1: PAD.l, y1: PAD.t, x2: PAD.l, y2: H - PAD.b, stroke: '#c9d1dc' }, svg);
    text(svg, PAD.l - 4, PAD.t + 8, String(max), 'end');
    text(svg, PAD.l - 4, H - PAD.b, '0', 'end');
  }
  function empty(svg, why) {
    text(svg, W / 2, H / 2, why, 'middle');
    svg.dataset.drawn = '0';
  }

  /** series: [{name, points: [[x(number), y]]}] */
  function lines(svg, series) {
    clear(svg);
    const all = series.flatMap((s) => s.points);
    if (all.length === 0) return empty(svg, 'no data yet');
    const xs = all.map((p) => p[0]);
    const x0 = Math.min(...xs);
    const x1 = Math.max(...xs, x0 + 1);
    const max = Math.max(1, ...all.map((p) => p[1]));
    axes(svg, max);
    const sx = (x) => PAD.l + ((x - x0) / (x1 - x0)) * (W - PAD.l - PAD.r);
    const sy = (y) => H - PAD.b - (y / max) * (H - PAD.t - PAD.b);
    series.forEach((s, i) => {
      if (s.points.length === 0) return;
      const d = s.points.map((p, j) => `${j ? 'L' : 'M'}${sx(p[0]).toFixed(1)},${sy(p[1]).toFixed(1)}`).join('');
      el('path', { d, fill: 'none', stroke: COLORS[i % COLORS.length], 'stroke-width': 2, class: 'series' }, svg);
      for (const p of s.points)
        el('circle', { cx: sx(p[0]), cy: sy(p[1]), r: 2.5, fill: COLORS[i % COLORS.length] }, svg);
      text(svg, PAD.l + 8 + i * 120, H - 6, `■ ${s.name}`).setAttribute('fill', COLORS[i % COLORS.length]);
    });
    svg.dataset.drawn = String(all.length);
  }

  /** bars: [{label, value}] */
  function bars(svg, items) {
    clear(svg);
    if (items.length === 0) return empty(svg, 'no data yet');
    const max = Math.max(1, ...items.map((b) => b.value));
    axes(svg, max);
    const bw = (W - PAD.l - PAD.r) / items.length;
    items.forEach((b, i) => {
      const h = (b.value / max) * (H - PAD.t - PAD.b);
      el(
        'rect',
        {
          x: PAD.l + i * bw + 2,
          y: H - PAD.b - h,
          width: Math.max(1, bw - 4),
          height: h,
          fill: COLORS[0],
          class: 'bar',
        },
        svg,
      ).appendChild(document.createElementNS(NS, 'title')).textContent = `${b.label}: ${b.value}`;
      text(svg, PAD.l + i * bw + bw / 2, H - PAD.b + 12, b.label.slice(0, Math.max(3, Math.floor(bw / 7))), 'middle');
    });
    svg.dataset.drawn = String(items.length);
  }

  async function refresh() {
    const res = await fetch('/api/ops/dashboard', { cache: 'no-store' });
    if (!res.ok) return;
    const d = await res.json();
    const minute = (p) => [Date.parse(p.t), p.n];
    lines(document.getElementById('plot-throughput'), [
      { name: 'events', points: d.throughput.events.map(minute) },
      { name: 'requests', points: d.throughput.requests.map(minute) },
    ]);
    const processors = [...new Set(d.samples.flatMap((s) => Object.keys(s.lag)))];
    lines(
      document.getElementById('plot-lag'),
      processors.map((p) => ({
        name: p,
        points: d.samples.filter((s) => p in s.lag).map((s) => [s.t, s.lag[p]]),
      })),
    );
    const last = d.samples[d.samples.length - 1];
    // every processor, 0 when it never sent anything to its DLQ
    const names = last ? [...new Set([...Object.keys(last.lag), ...Object.keys(last.dlq)])].sort() : [];
    bars(
      document.getElementById('plot-dlq'),
      names.map((label) => ({ label, value: last.dlq[label] || 0 })),
    );
    bars(
      document.getElementById('plot-trending'),
      d.trending.map((t) => ({ label: t.query, value: t.votes })),
    );
    bars(
      document.getElementById('plot-searches'),
      d.searchesPerDay.map((p) => ({ label: p.day.slice(5), value: p.n })),
    );
    document.querySelector('[data-ops-counter]').textContent = d.counter.label;
    document.querySelector('[data-updated]').textContent = `Updated ${new Date(d.generatedAt).toLocaleTimeString()}`;
    document.body.dataset.opsLoaded = String(Number(document.body.dataset.opsLoaded || 0) + 1);
  }
  refresh();
  setInterval(refresh, 5000);
})();
