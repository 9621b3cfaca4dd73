// The one script of the static site (with the bundled Vega, assets/vega.js). It reads data only from
// <script type="application/json"> blocks and never turns data into markup: sorting and filtering move
// existing rows; charts are rendered by Vega with its expression interpreter (no eval), so the
// Content-Security-Policy can forbid inline scripts and eval.
(() => {
  document.querySelectorAll('table.sortable th').forEach((th, i) => th.addEventListener('click', () => {
    const body = th.closest('table').tBodies[0];
    const rows = Array.from(body.rows);
    const asc = th.dataset.asc !== '1';
    th.dataset.asc = asc ? '1' : '0';
    const val = r => {
      const t = r.cells[i].textContent.trim();
      const n = parseFloat(t.replace(/,/g, ''));
      return isNaN(n) ? t.toLowerCase() : n;
    };
    rows.sort((a, b) => (val(a) > val(b) ? 1 : val(a) < val(b) ? -1 : 0) * (asc ? 1 : -1));
    rows.forEach(r => body.appendChild(r));
  }));
  const q = document.getElementById('filter');
  if (q) {
    q.addEventListener('input', () => document.querySelectorAll('table.sortable tbody tr').forEach(r => {
      r.style.display = r.textContent.toLowerCase().includes(q.value.toLowerCase()) ? '' : 'none';
    }));
  }
  document.querySelectorAll('script[type="application/json"][data-chart]').forEach(block => {
    const target = document.getElementById(block.dataset.chart);
    if (!target || typeof vegaEmbed !== 'function') return;
    vegaEmbed(target, JSON.parse(block.textContent), {actions: false, renderer: 'svg', ast: true});
  });
})();
