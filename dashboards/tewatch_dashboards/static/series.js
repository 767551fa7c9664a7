// The interactive series chart (uPlot): samples, median, baseline band, change points, environment shifts.
// Data comes from the page's JSON endpoint; every text from uploads goes into the DOM as textContent.
(function () {
  "use strict";
  const el = document.getElementById("chart");
  if (!el || typeof uPlot === "undefined") return;
  const info = document.getElementById("point-info");
  const C = {
    sample: "rgba(122,166,216,0.65)", median: "#1d2433", band: "rgba(118,185,0,0.14)", bandLine: "#76b900",
    regression: "#b54708", improvement: "#1849a9", shift: "#6b4fbb", failure: "#b42318", spread: "rgba(122,166,216,0.35)",
    pr: "#d6336c", prSample: "rgba(214,51,108,0.55)", tolerance: "#b42318",
  };

  const SECOND_STEPS = [[1, "s"], [1e-3, "ms"], [1e-6, "µs"], [1e-9, "ns"]];
  // the step a value of seconds reads in: 999.6 us reads as 1.00 ms, not 1.00e+3 us
  const secondStep = (v) => SECOND_STEPS.find(([scale, suffix]) => Math.abs(Number(v.toPrecision(3))) >= scale || suffix === "ns");

  // binary prefixes, as torch's allocator counts memory: the smallest that reads below 1000 at three digits
  const BYTE_STEPS = [[1, "B"], [1024, "KiB"], [1048576, "MiB"], [1073741824, "GiB"]];
  const BYTE_UNITS = { "bytes": "", "bytes/step": "/step" };
  // a byte axis ticks at whole binary steps (64 MiB, 128 MiB), not at tens of bytes
  const BYTE_INCRS = [0, 1, 2, 3, 4, 5].flatMap((k) => [1, 2, 4, 8, 16, 32, 64, 128, 256, 512].map((m) => m * 1024 ** k));
  const byteStep = (v) => BYTE_STEPS.find(([scale], i) => Math.abs(Number((v / scale).toPrecision(3))) < 1000 || i === BYTE_STEPS.length - 1);
  // the step a value reads in, and its suffix, for units that have steps (seconds, bytes); else null
  function unitStep(v, unit) {
    if (unit === "seconds") return secondStep(v);
    if (unit in BYTE_UNITS) { const [scale, name] = byteStep(v); return [scale, name + BYTE_UNITS[unit]]; }
    return null;
  }

  function fmt(v, unit) {
    if (v === null || v === undefined || !isFinite(v)) return "—";
    const step = unitStep(v, unit);
    if (step) return (v / step[0]).toPrecision(3) + " " + step[1];
    if (unit === "fraction") return (v * 100).toFixed(1) + " %";
    return v.toPrecision(4) + " " + unit;
  }
  // The y axis's tick labels: on a linear axis every tick in the unit of the largest, so that a zero on a ms
  // axis reads "0 ms"; on a log axis each tick in its own. A tick uPlot leaves unlabelled (null) gets none.
  // Units without steps (rel error, dB, TFLOP/s) are named once, in the axis's title.
  function yTickLabels(vals, unit, log) {
    const shown = (v) => v !== null && v !== undefined && isFinite(v);
    if (!unitStep(1, unit) && unit !== "fraction") return vals.map((v) => (shown(v) ? String(Number(v.toPrecision(4))) : ""));
    if (!unitStep(1, unit) || log) return vals.map((v) => (shown(v) ? fmt(v, unit) : ""));
    const top = Math.max(0, ...vals.filter(shown).map(Math.abs));
    const [scale, suffix] = unitStep(top, unit);
    return vals.map((v) => (shown(v) ? Number((v / scale).toPrecision(3)) + " " + suffix : ""));
  }
  // The y axis's title: the unit its ticks read in (MiB, ms), else the series' unit.
  function yAxisTitle(values, unit, log) {
    const top = Math.max(0, ...values.filter((v) => v !== null && isFinite(v)).map(Math.abs));
    const step = unitStep(top, unit);
    const name = step ? step[1] : unit === "fraction" ? "%" : unit;
    return log ? name + " (log scale)" : name;
  }

  // Room right of the plot for half of the widest commit label, so the last one is drawn whole.
  function rightPadding(labels, font) {
    const ctx = document.createElement("canvas").getContext("2d");
    ctx.font = font;
    const widths = labels.flatMap((label) => String(label).split("\n").map((line) => ctx.measureText(line).width));
    return Math.ceil(Math.max(0, ...widths) / 2) + 4;
  }

  const pct = (e) => (e >= 0 ? "+" : "") + (e * 100).toFixed(1) + " %";
  const shortSha = (s) => (s || "").slice(0, 10);

  function node(tag, attrs, text) {
    const n = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) n.setAttribute(k, v);
    if (text !== undefined && text !== null) n.textContent = String(text);
    return n;
  }

  function kv(pairs) {
    const dl = node("dl", { class: "kv" });
    for (const [k, v] of pairs) {
      dl.appendChild(node("dt", {}, k));
      const dd = node("dd");
      if (v instanceof Node) dd.appendChild(v); else dd.textContent = v;
      dl.appendChild(dd);
    }
    return dl;
  }

  function link(href, text) { const a = node("a", { href: href }, text); return a; }

  // Tick label for position x: the commit there as the server labels it (short sha, TE's version), else
  // the short commit of the point there (or of the bucket's first run).
  function commitLabel(d, x) {
    if (!Number.isInteger(x)) return "";
    const q = prPointAt(d, x);
    if (q) return "PR " + q.sha.slice(0, 7);
    if (d.labels && d.labels[x] !== undefined) return d.labels[x];
    if (d.aggregated) return "#" + x;
    const p = d.points[x - d.offset];
    return p ? p.commit : "";
  }

  // The pull request's head points (`?pr=N`), drawn after the history from d.pr.points[0].x on.
  function prPoints(d) { return d.pr ? d.pr.points : []; }
  function prPointAt(d, x) {
    const ps = prPoints(d);
    return ps.length && x >= ps[0].x ? ps[x - ps[0].x] || null : null;
  }

  // [first x, last x, tolerance] of each stretch of points that share one tolerance
  function toleranceSegments(line) {
    const out = [];
    for (const [x, t] of line) {
      const last = out[out.length - 1];
      if (last && last[2] === t) last[1] = x; else out.push([x, x, t]);
    }
    return out;
  }

  function bandAt(band, x) {
    for (const seg of band) if (x >= seg.x0 && x <= seg.x1) return seg;
    return null;
  }

  // The point's GPU state in one line, "" when none was recorded (the tooltip then leaves the line out).
  function gpuText(g) {
    const parts = [];
    const has = (v) => Array.isArray(v) && v.length > 0;
    if (has(g.sm_clock_mhz)) parts.push("SM " + g.sm_clock_mhz.join("–") + " MHz");
    if (has(g.mem_clock_mhz)) parts.push("mem " + g.mem_clock_mhz.join("–") + " MHz");
    if (has(g.power_w)) parts.push(g.power_w.join("–") + " W");
    if (has(g.temperature_c)) parts.push(g.temperature_c.join("–") + " °C");
    if (has(g.throttle_reasons)) parts.push("throttle: " + g.throttle_reasons.join(", "));
    return parts.join(" · ");
  }

  function describePoint(d, idx, pinned) {
    info.replaceChildren();
    const unit = d.series.unit;
    const nHistory = d.aggregated ? d.buckets.length : d.points.length;
    if (idx >= nHistory) { describeOne(d, prPoints(d)[idx - nHistory], pinned, "PR #" + d.pr.number + " head"); return; }
    if (d.aggregated) {
      const b = d.buckets[idx];
      info.appendChild(kv([
        ["Runs", b.n + " (#" + b.first_run + " … #" + b.last_run + ")"],
        ["Commits", b.first_commit + " … " + b.last_commit],
        ["Median", fmt(b.median, unit)],
        ["Spread", fmt(b.low, unit) + " – " + fmt(b.high, unit)],
        ["Failed verdicts", String(b.failures)],
        ["", "zoom in (choose a shorter range) for every sample"],
      ]));
      return;
    }
    describeOne(d, d.points[idx], pinned, "");
  }

  function describeOne(d, p, pinned, source) {
    const unit = d.series.unit;
    const verdict = node("span", { class: "badge " + statusClass(p.verdict) }, p.verdict || "no verdict");
    if (p.exception) verdict.textContent += " · " + p.exception;
    const gpu = gpuText(p.gpu || {});
    info.appendChild(kv([
      ["Commit", p.commit + (p.at ? "  ·  " + p.at.replace("T", " ").slice(0, 16) + " UTC" : "")],
      ["Run", link("/runs/" + p.run, "#" + p.run)],
      ["Median", fmt(p.value, unit) + "  (" + p.samples.length + " samples, q25–q75 " + fmt(p.q25, unit) + " – " + fmt(p.q75, unit) + ")"],
      ["Verdict", verdict],
      ...(gpu ? [["GPU state", gpu]] : []),
      ["Position", (source ? source + " · " : "") + "#" + p.x + (pinned ? "  (pinned — click again to release)" : "")],
    ]));
  }

  function statusClass(s) {
    if (s === "pass") return "st-pass";
    if (s === "unsupported") return "st-unsupported";
    if (["error", "fail_accuracy", "timeout", "oom"].includes(s)) return "st-fail";
    return "st-neutral";
  }

  function fillTables(d) {
    const cpBody = document.querySelector("#change-points tbody");
    const shBody = document.querySelector("#shifts tbody");
    const unit = d.series.unit;
    cpBody.replaceChildren();
    for (const cp of d.change_points) {
      const tr = node("tr");
      tr.appendChild(node("td", {}, "#" + cp.x));
      const td = node("td"); td.appendChild(link("/runs/" + cp.run_id, cp.commit || shortSha(cp.sha))); tr.appendChild(td);
      tr.appendChild(node("td", { class: "num" }, fmt(cp.baseline, unit)));
      tr.appendChild(node("td", { class: "num" }, fmt(cp.level_after, unit)));
      tr.appendChild(node("td", { class: "num" }, pct(cp.effect)));
      const dir = node("td"); dir.appendChild(node("span", { class: "badge st-" + cp.direction }, cp.direction));
      tr.appendChild(dir);
      tr.appendChild(node("td", { class: "muted" }, cp.source + (cp.environment_shift ? " · environment shift" : "")));
      cpBody.appendChild(tr);
    }
    if (!d.change_points.length) cpBody.appendChild(emptyRow(7, "No change points in this range."));
    shBody.replaceChildren();
    const shaAt = (x) => {
      if (d.aggregated) return "";
      const p = d.points[x - d.offset]; return p ? p.commit : "";
    };
    for (const s of d.shifts) {
      const tr = node("tr");
      tr.appendChild(node("td", {}, "#" + s.x));
      tr.appendChild(node("td", { class: "mono" }, shaAt(s.x)));
      tr.appendChild(node("td", { class: "shift-label" }, s.label));
      shBody.appendChild(tr);
    }
    if (!d.shifts.length) shBody.appendChild(emptyRow(3, "No environment shifts in this range."));
  }

  function emptyRow(cols, text) {
    const tr = node("tr"); tr.appendChild(node("td", { colspan: String(cols), class: "empty" }, text)); return tr;
  }

  function markers(d) {
    return {
      hooks: {
        draw: [(u) => {
          const ctx = u.ctx, top = u.bbox.top, bottom = u.bbox.top + u.bbox.height;
          ctx.save();
          const line = (x, colour, dash, width) => {
            const px = Math.round(u.valToPos(x - 0.5, "x", true));
            if (px < u.bbox.left || px > u.bbox.left + u.bbox.width) return null;
            ctx.strokeStyle = colour; ctx.lineWidth = width * devicePixelRatio; ctx.setLineDash(dash);
            ctx.beginPath(); ctx.moveTo(px, top); ctx.lineTo(px, bottom); ctx.stroke();
            return px;
          };
          ctx.font = (11 * devicePixelRatio) + "px system-ui, sans-serif";
          ctx.textAlign = "left";
          ctx.textBaseline = "alphabetic";
          d.shifts.forEach((s, i) => {
            const px = line(s.x, C.shift, [3 * devicePixelRatio, 3 * devicePixelRatio], 1.2);
            // stagger labels over three heights so that neighbouring shifts do not overprint
            const y = bottom - (6 + 14 * (i % 3)) * devicePixelRatio;
            if (px !== null) { ctx.fillStyle = C.shift; ctx.fillText("⇄ " + s.label, px + 4, y); }
          });
          const prs = prPoints(d);
          if (prs.length) {
            const px = line(prs[0].x, C.pr, [2 * devicePixelRatio, 2 * devicePixelRatio], 1);
            if (px !== null) { ctx.fillStyle = C.pr; ctx.fillText("PR #" + d.pr.number, px + 4, top + 28 * devicePixelRatio); }
          }
          toleranceSegments(d.tolerance || []).forEach(([x0, x1, t], i) => {
            const left = Math.max(u.bbox.left, u.valToPos(x0 - 0.5, "x", true));
            const right = Math.min(u.bbox.left + u.bbox.width, u.valToPos(x1 + 0.5, "x", true));
            const py = Math.round(u.valToPos(t, "y", true));
            if (right <= left || py < top || py > bottom) return;
            ctx.strokeStyle = C.tolerance; ctx.lineWidth = 1.5 * devicePixelRatio;
            ctx.setLineDash([8 * devicePixelRatio, 5 * devicePixelRatio]);
            ctx.beginPath(); ctx.moveTo(left, py); ctx.lineTo(right, py); ctx.stroke();
            if (i === 0) { ctx.fillStyle = C.tolerance; ctx.fillText("tolerance " + Number(t.toPrecision(4)), left + 4, py - 4 * devicePixelRatio); }
          });
          for (const cp of d.change_points) {
            const px = line(cp.x, C[cp.direction], [], 2);
            if (px !== null) { ctx.fillStyle = C[cp.direction]; ctx.fillText(pct(cp.effect), px + 4, top + 14 * devicePixelRatio); }
          }
          ctx.restore();
        }],
      },
    };
  }

  function build(d) {
    const unit = d.series.unit;
    const xs = [], seriesOpts = [{}], data = [];
    const bandLo = [], bandHi = [], baseline = [];
    let nSamples = 0;
    if (d.aggregated) {
      const med = [], lo = [], hi = [];
      for (const b of d.buckets) { xs.push(b.x); med.push(b.median); lo.push(b.low); hi.push(b.high); }
      data.push(xs, hi, lo, med);
      seriesOpts.push({ label: "spread high", stroke: C.spread, width: 0, points: { show: false } },
                      { label: "spread low", stroke: C.spread, width: 0, points: { show: false } },
                      { label: "median", stroke: C.median, width: 1.5, points: { show: false } });
    } else {
      const med = [];
      for (const p of d.points) { xs.push(p.x); med.push(p.value); nSamples = Math.max(nSamples, p.samples.length); }
      data.push(xs, med);
      seriesOpts.push({ label: "median", stroke: C.median, width: 1.4, points: { show: true, size: 4, fill: C.median } });
      for (let k = 0; k < nSamples; k++) {
        data.push(d.points.map((p) => (k < p.samples.length ? p.samples[k] : null)));
        seriesOpts.push({ label: k === 0 ? "samples" : "", stroke: C.sample, width: 0, paths: () => null,
                          points: { show: true, size: 4, stroke: C.sample, fill: C.sample }, legend: false });
      }
    }
    const prs = prPoints(d);
    if (prs.length) {
      // the PR's head runs after the history: history columns get nulls there, PR columns nulls before
      const nHistory = xs.length, pad = (col, n, before) => (before ? Array(n).fill(null).concat(col) : col.concat(Array(n).fill(null)));
      for (let i = 1; i < data.length; i++) data[i] = pad(data[i], prs.length, false);
      for (const p of prs) xs.push(p.x);
      data.push(pad(prs.map((p) => p.value), nHistory, true));
      seriesOpts.push({ label: "PR head median", stroke: C.pr, width: 1.4, points: { show: true, size: 6, fill: C.pr } });
      const cmp = d.pr.comparison;
      if (cmp && cmp.baseline !== null) {
        data.push(pad(prs.map(() => cmp.baseline), nHistory, true));
        seriesOpts.push({ label: "PR merge-base median", stroke: C.pr, width: 1, dash: [6, 4], points: { show: false } });
      }
      const nPr = prs.reduce((n, p) => Math.max(n, p.samples.length), 0);
      for (let k = 0; k < nPr; k++) {
        data.push(pad(prs.map((p) => (k < p.samples.length ? p.samples[k] : null)), nHistory, true));
        seriesOpts.push({ label: k === 0 ? "PR samples" : "", stroke: C.prSample, width: 0, paths: () => null,
                          points: { show: true, size: 5, stroke: C.prSample, fill: C.prSample }, legend: false });
      }
    }
    const tolerance = new Map((d.tolerance || []).map(([x, t]) => [x, t]));
    if (tolerance.size) {
      data.push(xs.map((x) => (tolerance.has(x) ? tolerance.get(x) : null)));
      // in the data so that the y range holds it; drawn by markers(), as a stretch per tolerance
      seriesOpts.push({ label: "tolerance", stroke: "rgba(0,0,0,0)", points: { show: false } });
    }
    for (const x of xs) {
      const seg = bandAt(d.band, x);
      bandLo.push(seg ? seg.lower : null); bandHi.push(seg ? seg.upper : null); baseline.push(seg ? seg.baseline : null);
    }
    const base = data.length;
    data.push(bandHi, bandLo, baseline);
    seriesOpts.push({ label: "band upper", stroke: "rgba(0,0,0,0)", points: { show: false } },
                    { label: "band lower", stroke: "rgba(0,0,0,0)", points: { show: false } },
                    { label: "baseline", stroke: C.bandLine, width: 1, dash: [5, 4], points: { show: false } });
    const bands = [{ series: [base, base + 1], fill: C.band }];
    if (d.aggregated) bands.push({ series: [1, 2], fill: C.spread });

    let pinned = null;
    const log = d.scale === "log";
    const drawnValues = data.slice(1).flat();
    const axisFont = "12px system-ui, -apple-system, \"Segoe UI\", Roboto, sans-serif";
    const opts = {
      width: el.clientWidth || 1000, height: 380,
      padding: [null, rightPadding(xs.map((x) => commitLabel(d, x)), axisFont), null, null],
      scales: { x: { time: false }, y: log ? { distr: 3, log: 10 } : {} },
      series: seriesOpts,
      bands: bands,
      legend: { show: false },
      cursor: { drag: { x: true, y: false }, focus: { prox: 24 } },
      axes: [
        { label: "commit (oldest → newest)", stroke: "#4b5565", grid: { stroke: "#eef0f3" }, space: 70, font: axisFont,
          incrs: [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000, 20000, 50000],
          values: (u, vals) => vals.map((v) => commitLabel(d, v)) },
        { stroke: "#4b5565", size: 72, grid: { stroke: "#eef0f3" }, font: axisFont,
          ...(unit in BYTE_UNITS ? { incrs: BYTE_INCRS } : {}),
          label: yAxisTitle(drawnValues, unit, log), labelFont: axisFont, labelSize: 20,
          values: (u, vals) => yTickLabels(vals, unit, log) },
      ],
      hooks: {
        setCursor: [(u) => {
          if (pinned !== null) return;
          const idx = u.cursor.idx;
          if (idx !== null && idx !== undefined) describePoint(d, idx, false);
        }],
      },
      plugins: [markers(d)],
    };
    const plot = new uPlot(opts, data, el);
    plot.over.addEventListener("click", () => {
      const idx = plot.cursor.idx;
      if (pinned !== null) { pinned = null; return; }
      if (idx !== null && idx !== undefined) { pinned = idx; describePoint(d, idx, true); }
    });
    window.addEventListener("resize", () => plot.setSize({ width: el.clientWidth, height: 380 }));
    el.tewatch = { plot: plot, yTickLabels: yTickLabels, fmt: fmt };  // what the browser tests read
    el.dataset.yDistr = String(plot.scales.y.distr);
    el.dataset.yTitle = opts.axes[1].label;
    el.dataset.tolerance = String(tolerance.size);
    el.dataset.ready = "1";
    el.dataset.points = String(d.aggregated ? d.buckets.length : d.points.length);
    el.dataset.samples = String(d.aggregated ? 0 : d.points.reduce((n, p) => n + p.samples.length, 0));
    if (d.pr) {
      el.dataset.prPoints = String(d.pr.points.length);
      el.dataset.prSamples = String(d.pr.points.reduce((n, p) => n + p.samples.length, 0));
      el.dataset.prSeries = String(seriesOpts.filter((o) => o.stroke === C.pr || o.stroke === C.prSample).length);
    }
  }

  // With the scale left to the chart (auto), the toggle offers the other scale than the one chosen; the
  // tolerance's legend shows where a check's tolerance is drawn.
  function showScale(d) {
    const toggle = document.getElementById("scale-toggle");
    if (toggle && el.dataset.scale === "auto" && d.scale === "log") {
      toggle.textContent = "Linear scale";
      toggle.setAttribute("href", toggle.dataset.linear);
    }
    const legend = document.getElementById("tolerance-legend");
    if (legend && d.tolerance && d.tolerance.length) legend.hidden = false;
  }

  fetch(el.dataset.src, { headers: { Accept: "application/json" } })
    .then((r) => { if (!r.ok) throw new Error("HTTP " + r.status); return r.json(); })
    .then((d) => {
      fillTables(d);
      showScale(d);
      if ((d.aggregated ? d.buckets.length : d.points.length) + prPoints(d).length === 0) {
        el.appendChild(node("div", { class: "empty" }, "No results in this range."));
        el.dataset.ready = "1";
        return;
      }
      build(d);
    })
    .catch((err) => { el.appendChild(node("div", { class: "empty" }, "Could not load the chart: " + err.message)); });
})();
