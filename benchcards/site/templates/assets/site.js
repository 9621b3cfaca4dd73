// The one script of the static site (with the bundled Vega, assets/vega.js, on pages with charts). It reads
// data only from <script type="application/json"> blocks and from assets/search.js (a data-only file), and
// never turns data into markup: sorting and filtering move existing rows, search results are built with
// textContent; charts are rendered by Vega with its expression interpreter (no eval), so the
// Content-Security-Policy can forbid inline scripts and eval.
(() => {
  const root = document.body.dataset.root || '';

  // ---- sortable tables: a click on a column header sorts by it (numbers as numbers), again reverses
  const cellValue = (row, i) => {
    const t = row.cells[i] ? row.cells[i].textContent.trim() : '';
    if (t === '' || t === '\u2014') return [2, ''];  // not measured: last in either direction
    const n = parseFloat(t.replace(/,/g, ''));
    return /^[-+]?[\d.,]+/.test(t) && !isNaN(n) ? [0, n] : [1, t.toLowerCase()];
  };
  const compare = (a, b) => (a[0] - b[0]) || (a[1] > b[1] ? 1 : a[1] < b[1] ? -1 : 0);
  document.querySelectorAll('table.sortable th').forEach(th => th.addEventListener('click', () => {
    const i = th.cellIndex;  // the column within its own table (a page may have several)
    const table = th.closest('table');
    const body = table.tBodies[0];
    // a first click sorts the way the figure is better (largest decode first, soonest first token first)
    const asc = th.dataset.sort ? th.dataset.sort !== 'asc' : th.dataset.first !== 'desc';
    table.querySelectorAll('th').forEach(h => { delete h.dataset.sort; h.removeAttribute('aria-sort'); });
    th.dataset.sort = asc ? 'asc' : 'desc';
    th.setAttribute('aria-sort', asc ? 'ascending' : 'descending');
    const rows = Array.from(body.rows).map((r, k) => [cellValue(r, i), k, r]);
    const missing = (a, b) => (a[0][0] === 2) - (b[0][0] === 2);
    rows.sort((a, b) => missing(a, b) || (compare(a[0], b[0]) * (asc ? 1 : -1)) || (a[1] - b[1]));  // stable
    rows.forEach(r => body.appendChild(r[2]));
  }));

  // ---- the filter box of a list: every word typed must occur in the row
  const words = text => text.toLowerCase().split(/\s+/).filter(Boolean);
  const filter = document.getElementById('filter');
  if (filter) {
    filter.addEventListener('input', () => {
      const want = words(filter.value);
      document.querySelectorAll('table.sortable tbody tr').forEach(r => {
        const text = r.textContent.toLowerCase();
        r.hidden = !want.every(w => text.includes(w));
      });
      // a table left without rows says so (the home page has one table per tier)
      document.querySelectorAll('table.sortable').forEach(t => {
        const box = t.parentElement;
        let note = box.nextElementSibling;
        if (!note || !note.classList.contains('no-match')) {
          note = document.createElement('p');
          note.className = 'muted no-match';
          note.textContent = 'No row shown here matches the filter (the search box at the top finds any setup).';
          box.after(note);
        }
        const none = Array.from(t.tBodies[0].rows).every(r => r.hidden);
        note.hidden = !none;
        t.hidden = none;
      });
    });
  }

  // ---- site search over every setup, tier and model (assets/search.js, loaded on first use)
  const box = document.getElementById('search');
  const list = document.getElementById('search-results');
  const LIMIT = 20;
  let loading = null;
  // the packed index (benchcards.site.search_pack) back to [address, title, kind, words, tier] entries
  const unpack = p => {
    if (!p || p.format !== 2) return [];
    const text = i => p.texts[i].map(k => p.strings[k]).join(' ');
    return p.entries.map(([middle, pat, kind, tier, title, extra, withMiddle]) => {
      const t = text(title);
      const words = [t.toLowerCase(), text(extra), withMiddle ? middle : ''].filter(Boolean).join(' ');
      return [p.patterns[pat].replace('*', () => middle), t, p.strings[kind], words, p.strings[tier]];
    });
  };
  let unpacked = null;
  const loadIndex = () => {
    if (unpacked) return Promise.resolve(unpacked);
    if (window.BENCHCARDS_SEARCH) return Promise.resolve(unpacked = unpack(window.BENCHCARDS_SEARCH));
    if (!loading) {
      loading = new Promise((resolve, reject) => {
        const s = document.createElement('script');
        s.src = root + 'assets/search.js';
        s.onload = () => resolve(unpacked = unpack(window.BENCHCARDS_SEARCH));
        s.onerror = reject;
        document.head.appendChild(s);
      });
    }
    return loading;
  };
  const show = (entries, query) => {
    // a size ('16 GB', '16gb', '80+ GB') names a tier: only that tier's setups and page match it
    let tier = null;
    const rest = query.toLowerCase().replace(/(^|\s)(\d+)\s*\+?\s*gi?b(?=\s|$)/g, (m, pre, n) => {
      tier = n + 'gb';
      return pre;
    });
    const want = words(rest);
    list.replaceChildren();
    if (!want.length && tier === null) { list.hidden = true; return; }
    const hits = entries.filter(e => (tier === null || e[4] === tier) && want.every(w => e[3].includes(w)));
    hits.slice(0, LIMIT).forEach(([href, title, kind]) => {
      const li = document.createElement('li');
      const a = document.createElement('a');
      a.href = root + href;
      a.textContent = title;
      const k = document.createElement('span');
      k.className = 'kind';
      k.textContent = kind;
      li.append(a, ' ', k);
      list.appendChild(li);
    });
    const more = document.createElement('li');
    more.className = 'count';
    more.textContent = hits.length === 0 ? 'No match' :
      hits.length > LIMIT ? `${LIMIT} of ${hits.length} matches: type more words` :
      `${hits.length} match${hits.length === 1 ? '' : 'es'}`;
    list.appendChild(more);
    list.hidden = false;
  };
  if (box && list) {
    box.addEventListener('focus', () => { loadIndex().catch(() => {}); });
    box.addEventListener('input', () => { loadIndex().then(e => show(e, box.value)).catch(() => {}); });
    box.addEventListener('keydown', ev => {
      if (ev.key === 'Escape') { box.value = ''; list.hidden = true; }
      if (ev.key === 'Enter') {
        const first = list.querySelector('a');
        if (first) window.location.href = first.href;
      }
    });
  }

  // ---- charts
  document.querySelectorAll('script[type="application/json"][data-chart]').forEach(block => {
    const target = document.getElementById(block.dataset.chart);
    if (!target || typeof vegaEmbed !== 'function') return;
    vegaEmbed(target, JSON.parse(block.textContent), {actions: false, renderer: 'svg', ast: true});
  });
})();
