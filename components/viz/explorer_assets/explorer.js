// The attention explorer: draws the document embedded in #explorer-data (attnlab.viz.explorer).
// No network, no storage: the page works as a local file and inside the MLflow UI's iframe.
(function () {
  "use strict";
  const started = performance.now();
  const doc = JSON.parse(document.getElementById("explorer-data").textContent);
  const $ = (id) => document.getElementById(id);
  const HL = "37, 99, 235"; // the highlight colour; its alpha is the attention weight

  // epoch: an index into the snapshots' epochs, clamped to the last one (the trained model) at first.
  // explain: "attention" (the view's weights) or a gradient method of the model's "explanations".
  const state = { model: 0, example: 0, view: "average", explain: "attention", probe: 0, epoch: Number.MAX_SAFE_INTEGER, active: null };

  function el(tag, attrs, text) {
    const node = document.createElement(tag);
    for (const [key, value] of Object.entries(attrs || {})) {
      if (value === null || value === undefined || value === false) continue;
      if (key === "class") node.className = value;
      else node.setAttribute(key, value === true ? "" : String(value));
    }
    if (text !== undefined) node.textContent = text;
    return node;
  }

  // A token as shown: spaces and empty strings made visible.
  function shown(token) {
    if (token === " ") return "\u2423";
    if (token === "") return "\u2205";
    return token;
  }
  const isSpecial = (token) => token.length > 2 && token[0] === "<" && token[token.length - 1] === ">";
  // Character tokens read as a word; longer tokens keep a space between them.
  function joined(tokens) {
    const plain = tokens.filter((t) => !isSpecial(t));
    return plain.every((t) => t.length <= 1) ? plain.join("") : plain.join(" ");
  }
  const fmt = (w) => (w === undefined || w === null ? "" : Number(w).toFixed(3));
  const alpha = (w) => "rgba(" + HL + ", " + w + ")";

  function argmax(values) {
    let best = 0;
    for (let i = 1; i < values.length; i++) if (values[i] > values[best]) best = i;
    return values.length ? best : -1;
  }
  const column = (matrix, c) => matrix.map((row) => row[c]);

  const model = () => doc.models[state.model];
  const example = () => model().examples[state.example];
  const ATTENTION = "attention";
  const byAttention = () => state.explain === ATTENTION;
  const methodName = (method) => method.replace(/_/g, " ");
  // The matrix drawn: the view's attention weights, or the chosen method's shares of attribution.
  function weights() {
    if (byAttention()) return model().views.length ? example().weights[state.view] : null;
    return (example().explained || {})[state.explain] || null;
  }
  function noWeightsText() {
    if (byAttention()) return "this model has no attention weights";
    const explained = model().examples.filter((ex) => ex.explained && ex.explained[state.explain]).length;
    return "this example is not explained by " + methodName(state.explain) + ": the page explains its first " + explained + " examples";
  }

  // ---- header: title, model and view selectors -------------------------------------------
  function metricsText(m) {
    if (!m.metrics) return "";
    return Object.entries(m.metrics)
      .map(([k, v]) => k.replace(/_/g, " ") + " " + (v === null ? "n/a" : Number(v).toFixed(3)))
      .join(" \u00b7 ");
  }

  function renderModelSelect() {
    const select = $("model-select");
    select.replaceChildren(...doc.models.map((m, i) => el("option", { value: i }, m.name)));
    select.value = String(state.model);
    $("model-control").hidden = doc.models.length < 2;
  }

  function renderViewSelect() {
    const views = model().views;
    if (!views.includes(state.view)) state.view = views[0] || "average";
    const methods = model().explanations || [];
    if (!byAttention() && !methods.includes(state.explain)) state.explain = ATTENTION;
    const explain = $("explain-select");
    explain.replaceChildren(...[ATTENTION, ...methods].map((m) => el("option", { value: m }, methodName(m))));
    explain.value = state.explain;
    $("explain-control").hidden = !methods.length;
    const select = $("view-select");
    select.replaceChildren(...views.map((v) => el("option", { value: v }, v)));
    select.value = state.view;
    $("view-control").hidden = views.length < 2 || !byAttention();
    $("model-metrics").textContent =
      (doc.models.length < 2 ? model().name + (metricsText(model()) ? ": " : "") : "") + metricsText(model());
  }

  // ---- the example list: wrong ones marked, search and "wrong only" filters --------------
  function markOf(ex) {
    if (ex.correct === false) return el("span", { class: "mark wrong-mark", title: "wrong", "aria-label": "wrong" }, "\u2717");
    if (ex.correct === true) return el("span", { class: "mark right-mark", title: "right", "aria-label": "right" }, "\u2713");
    return el("span", { class: "mark", "aria-hidden": "true" }, "\u00b7");
  }

  function searchText(ex) {
    return [ex.source_tokens.join(""), ex.source_tokens.join(" "), ex.output_tokens.join(""),
      ex.output_tokens.join(" "), ex.target || ""].join("\n").toLowerCase();
  }

  function renderList() {
    const list = $("example-list");
    const items = model().examples.map((ex, i) => {
      const item = el("li", {
        role: "option", "data-testid": "example-item", "data-index": i, tabindex: -1,
        class: ex.correct === false ? "wrong" : "", "aria-selected": i === state.example ? "true" : "false",
      });
      item.append(markOf(ex), el("span", { class: "src" }, joined(ex.source_tokens)), el("span", { class: "arrow", "aria-hidden": "true" }, "\u2192"),
        el("span", { class: "out" }, joined(ex.output_tokens)));
      item.dataset.search = searchText(ex);
      return item;
    });
    list.replaceChildren(...items);
    applyFilter();
  }

  function visibleItems() {
    return Array.from($("example-list").children).filter((item) => !item.hidden);
  }

  function applyFilter() {
    const query = $("search").value.trim().toLowerCase();
    const wrongOnly = $("wrong-only").checked;
    let shownCount = 0;
    for (const item of $("example-list").children) {
      const ex = model().examples[Number(item.dataset.index)];
      item.hidden = (query && !item.dataset.search.includes(query)) || (wrongOnly && ex.correct !== false);
      if (!item.hidden) shownCount++;
    }
    const total = model().examples.length;
    const wrong = model().examples.filter((ex) => ex.correct === false).length;
    $("list-count").textContent = shownCount + " of " + total + " shown" + (wrong ? " \u00b7 " + wrong + " wrong" : "");
    rovingTabindex();
  }

  // One list item is in the tab order (the chosen one, else the first shown); arrows move.
  function rovingTabindex(focusIndex) {
    const visible = visibleItems();
    const chosen = visible.find((item) => Number(item.dataset.index) === (focusIndex ?? state.example)) || visible[0];
    for (const item of $("example-list").children) item.tabIndex = item === chosen ? 0 : -1;
    return chosen;
  }

  function onListKey(event) {
    const item = event.target.closest("li");
    if (!item) return;
    const visible = visibleItems();
    const at = visible.indexOf(item);
    let next = null;
    if (event.key === "ArrowDown") next = visible[Math.min(at + 1, visible.length - 1)];
    else if (event.key === "ArrowUp") next = visible[Math.max(at - 1, 0)];
    else if (event.key === "Home") next = visible[0];
    else if (event.key === "End") next = visible[visible.length - 1];
    else if (event.key === "Enter" || event.key === " ") {
      event.preventDefault();
      choose(Number(item.dataset.index));
      return;
    } else return;
    event.preventDefault();
    if (next) {
      rovingTabindex(Number(next.dataset.index));
      next.focus();
    }
  }

  function choose(index) {
    state.example = index;
    state.active = null;
    for (const item of $("example-list").children) item.setAttribute("aria-selected", Number(item.dataset.index) === index ? "true" : "false");
    rovingTabindex();
    renderDetail();
  }

  // ---- the chosen example: tokens, grid, comparison --------------------------------------
  function renderDetail() {
    const ex = example();
    const info = $("detail-info");
    const rows = [["source", joined(ex.source_tokens)], ["output", joined(ex.output_tokens)]];
    if (ex.target !== null) rows.push(["target", ex.target]);
    if (ex.correct !== null) rows.push(["", ex.correct ? "\u2713 right" : "\u2717 wrong"]);
    info.replaceChildren(...rows.flatMap(([k, v]) => [el("dt", {}, k), el("dd", { class: k === "" ? (ex.correct ? "right" : "wrong") : "" }, v)]));

    $("source-row").replaceChildren(...ex.source_tokens.map((t, i) => tokenButton(t, "source", i)));
    $("output-row").replaceChildren(...ex.output_tokens.map((t, i) => tokenButton(t, "output", i)));
    const w = weights();
    const wrap = $("grid-wrap");
    $("detail-heading").textContent = byAttention() ? "Attention" : "Attribution: " + methodName(state.explain);
    $("legend-ramp").textContent = byAttention() ? "weight 0 to 1" : "share of the attribution, 0 to 1";
    $("legend-top").textContent = byAttention() ? "most attended (argmax of the row)" : "largest share (argmax of the row)";
    if (w) {
      const caption = byAttention() ? "attention weights, " + state.view : methodName(state.explain) + ", share of the attribution";
      wrap.replaceChildren(grid(ex.source_tokens, ex.output_tokens, w, ex.gold, "grid-cell", caption));
    } else {
      wrap.replaceChildren(el("p", { class: "no-weights", "data-testid": "no-weights" }, noWeightsText()));
    }
    $("hover-info").textContent = "";
    renderCompare();
  }

  function tokenButton(token, side, index) {
    const button = el("button", {
      type: "button", class: "token" + (isSpecial(token) ? " special" : ""),
      "data-testid": side + "-token", "data-index": index, "aria-label": side + " " + (index + 1) + ": " + token,
    }, shown(token));
    const activate = () => highlight(side, index);
    button.addEventListener("mouseenter", activate);
    button.addEventListener("focus", activate);
    button.addEventListener("mouseleave", restore);
    button.addEventListener("blur", restore);
    return button;
  }

  // After the pointer leaves: keep the focused token's highlight, else clear.
  function restore() {
    const focused = document.activeElement;
    if (focused && focused.classList.contains("token") && focused.closest("#detail")) {
      highlight(focused.dataset.testid === "source-token" ? "source" : "output", Number(focused.dataset.index));
    } else {
      highlight(null, -1);
    }
  }

  // Shade one side's tokens by the weights of a token on the other side; mark the argmax.
  function highlight(side, index) {
    const ex = example();
    const w = weights();
    const sources = $("source-row").children;
    const outputs = $("output-row").children;
    for (const node of [...sources, ...outputs]) {
      node.classList.remove("top", "active", "gold");
      node.style.backgroundColor = "";
    }
    for (const cell of $("grid-wrap").querySelectorAll(".row-active, .col-active")) cell.classList.remove("row-active", "col-active");
    state.active = side ? { side, index } : null;
    const info = $("hover-info");
    if (!side) {
      info.textContent = "";
      return;
    }
    (side === "output" ? outputs : sources)[index].classList.add("active");
    if (!w) {
      info.textContent = noWeightsText();
      return;
    }
    const [reads, readBy, amount] = byAttention()
      ? ["attends most to", "is read most by", "weight"]
      : ["depends most, by " + methodName(state.explain) + ", on", "matters most, by " + methodName(state.explain) + ", to", "share"];
    const gold = ex.gold || [];
    if (side === "output") {
      const row = w[index];
      const top = argmax(row);
      row.forEach((weight, j) => {
        sources[j].style.backgroundColor = alpha(weight);
        sources[j].classList.toggle("top", j === top);
      });
      for (const j of gold[index] || []) sources[j].classList.add("gold");
      for (const cell of $("grid-wrap").querySelectorAll('[data-row="' + index + '"]')) cell.classList.add("row-active");
      const goldText = (gold[index] || []).map((j) => "'" + ex.source_tokens[j] + "' (" + (j + 1) + ")").join(", ");
      info.textContent = "output '" + ex.output_tokens[index] + "' (" + (index + 1) + ") " + reads + " source '" +
        ex.source_tokens[top] + "' (" + (top + 1) + ", " + amount + " " + fmt(row[top]) + ")" +
        (goldText ? "; gold: " + goldText : index < gold.length ? "; no gold source" : "");
    } else {
      const col = column(w, index);
      const top = argmax(col);
      col.forEach((weight, i) => {
        outputs[i].style.backgroundColor = alpha(weight);
        outputs[i].classList.toggle("top", i === top);
      });
      gold.forEach((positions, i) => { if (positions.includes(index)) outputs[i].classList.add("gold"); });
      for (const cell of $("grid-wrap").querySelectorAll('[data-col="' + index + '"]')) cell.classList.add("col-active");
      info.textContent = "source '" + ex.source_tokens[index] + "' (" + (index + 1) + ") " + readBy + " output '" +
        ex.output_tokens[top] + "' (" + (top + 1) + ", " + amount + " " + fmt(col[top]) + ")";
    }
  }

  // The [Lt, Ls] heatmap: rows are output tokens, columns source tokens.
  function grid(sources, outputs, matrix, gold, testid, caption) {
    const table = el("table", { class: "grid", "data-testid": testid === "grid-cell" ? "grid" : "snapshot-grid" });
    table.append(el("caption", { class: "visually-hidden" }, caption));
    const head = el("tr", {});
    head.append(el("th", { scope: "col", class: "corner" }, "out \\ src"));
    sources.forEach((t, j) => head.append(el("th", { scope: "col", "data-col": j, class: isSpecial(t) ? "special" : "" }, shown(t))));
    table.append(el("thead", {}, undefined));
    table.tHead.append(head);
    const body = el("tbody", {});
    matrix.forEach((row, i) => {
      const tr = el("tr", {});
      tr.append(el("th", { scope: "row", "data-row": i, class: isSpecial(outputs[i]) ? "special" : "" }, shown(outputs[i])));
      const top = argmax(row);
      const goldRow = (gold && gold[i]) || [];
      row.forEach((weight, j) => {
        const cell = el("td", {
          "data-testid": testid, "data-row": i, "data-col": j, "data-weight": weight,
          class: [goldRow.includes(j) ? "gold" : "", j === top ? "argmax" : ""].join(" ").trim() || null,
          title: "output '" + outputs[i] + "' (" + (i + 1) + ") \u2190 source '" + sources[j] + "' (" + (j + 1) + "): " + fmt(weight) +
            (goldRow.includes(j) ? ", gold" : "") + (j === top ? (testid === "grid-cell" && !byAttention() ? ", largest share" : ", most attended") : ""),
        });
        cell.style.backgroundColor = alpha(weight);
        if (weight > 0.6) cell.classList.add("dark");
        tr.append(cell);
      });
      body.append(tr);
    });
    table.append(body);
    if (testid === "grid-cell") {
      table.addEventListener("mouseover", (event) => {
        const cell = event.target.closest("td");
        if (cell) highlight("output", Number(cell.dataset.row));
      });
      table.addEventListener("mouseleave", restore);
    }
    return table;
  }

  // A sweep's page: the chosen input in every model.
  function renderCompare() {
    const box = $("compare");
    if (doc.models.length < 2) {
      box.replaceChildren();
      return;
    }
    const table = el("table", { class: "compare", "data-testid": "compare" });
    table.append(el("caption", {}, "This input in every model"));
    const head = el("tr", {});
    for (const name of ["model", "output", "", "metrics"]) head.append(el("th", { scope: "col" }, name));
    table.append(head);
    doc.models.forEach((m, i) => {
      const ex = m.examples[state.example];
      const tr = el("tr", { class: i === state.model ? "current" : "" });
      const name = el("th", { scope: "row" });
      const button = el("button", { type: "button", class: "linklike", "aria-current": i === state.model ? "true" : null }, m.name);
      button.addEventListener("click", () => setModel(i));
      name.append(button);
      tr.append(name, el("td", { class: "out" }, joined(ex.output_tokens)));
      const mark = el("td", {});
      mark.append(markOf(ex));
      tr.append(mark, el("td", { class: "metrics" }, metricsText(m)));
      table.append(tr);
    });
    box.replaceChildren(table);
  }

  // ---- snapshots across training --------------------------------------------------------
  function renderSnapshots(keepEpoch) {
    const snaps = model().snapshots;
    const section = $("snapshots");
    section.hidden = !snaps || !snaps.examples.length;
    if (section.hidden) return;
    const probes = $("probe-select");
    probes.replaceChildren(...snaps.examples.map((p, i) => el("option", { value: i }, joined(p.source_tokens) + " \u2192 " + joined(p.output_tokens))));
    state.probe = Math.min(state.probe, snaps.examples.length - 1);
    probes.value = String(state.probe);
    const slider = $("epoch-slider");
    slider.max = String(snaps.epochs.length - 1);
    if (!keepEpoch) state.epoch = snaps.epochs.length - 1;
    state.epoch = Math.min(state.epoch, snaps.epochs.length - 1);
    slider.value = String(state.epoch);
    $("play").hidden = snaps.epochs.length < 2;
    renderSnapshot();
  }

  // A snapshot's name: its label when the document has labels (snapshots inside an epoch), else its epoch.
  const snapshotLabel = (snaps, k) => (snaps.labels ? snaps.labels[k] : "epoch " + snaps.epochs[k]);
  // Its short name in the per-snapshot summary: the optimisation step when known, else the epoch.
  const snapshotKey = (snaps, k) => (snaps.steps ? snaps.steps[k] : snaps.epochs[k]);

  function renderSnapshot() {
    const snaps = model().snapshots;
    const probe = snaps.examples[state.probe];
    const matrix = probe.weights[state.epoch];
    const label = snapshotLabel(snaps, state.epoch);
    $("epoch-label").textContent = label + " (" + (state.epoch + 1) + " of " + snaps.epochs.length + ")";
    $("epoch-slider").setAttribute("aria-valuetext", label);
    // Per epoch: at how many aligned steps (a gold source known) the most attended source is gold.
    const gold = probe.gold || [];
    const aligned = gold.filter((positions, i) => positions.length && i < matrix.length).length;
    const onGold = (m) => m.filter((row, i) => gold[i] && gold[i].length && gold[i].includes(argmax(row))).length;
    const info = $("snapshot-info");
    if (!aligned) {
      info.textContent = label + " (no gold alignment known for this probe)";
    } else {
      info.replaceChildren("most attended source on gold, by " + (snaps.steps ? "step" : "epoch") + ": ");
      snaps.epochs.forEach((e, k) => {
        if (k) info.append(" \u00b7 ");
        info.append(el(k === state.epoch ? "strong" : "span", {}, snapshotKey(snaps, k) + ": " + onGold(probe.weights[k]) + "/" + aligned));
      });
    }
    $("snapshot-grid").replaceChildren(grid(probe.source_tokens, probe.output_tokens, matrix, probe.gold, "snapshot-cell",
      "attention " + (snaps.labels ? label : "after " + label)));
  }

  let playing = null;
  function stopPlaying() {
    if (playing !== null) clearInterval(playing);
    playing = null;
    $("play").textContent = "play";
  }
  function togglePlay() {
    if (playing !== null) return stopPlaying();
    const last = model().snapshots.epochs.length - 1;
    if (state.epoch >= last) state.epoch = -1;
    $("play").textContent = "pause";
    const step = () => {
      if (state.epoch >= last) return stopPlaying();
      state.epoch++;
      $("epoch-slider").value = String(state.epoch);
      renderSnapshot();
    };
    step();
    playing = setInterval(step, 700);
  }

  // ---- wiring ----------------------------------------------------------------------------
  function setModel(index) {
    state.model = index;
    state.example = Math.min(state.example, model().examples.length - 1);
    $("model-select").value = String(index);
    $("detail").hidden = !model().examples.length;
    stopPlaying();
    renderViewSelect();
    renderList();
    if (model().examples.length) renderDetail();
    renderSnapshots(true);
  }

  function start() {
    document.title = doc.title;
    $("subtitle").textContent = doc.subtitle || "";
    $("subtitle").hidden = !doc.subtitle;
    $("note").textContent = doc.note || "";
    $("note").hidden = !doc.note;
    renderModelSelect();
    $("model-select").addEventListener("change", (event) => setModel(Number(event.target.value)));
    $("view-select").addEventListener("change", (event) => {
      state.view = event.target.value;
      renderDetail();
    });
    $("explain-select").addEventListener("change", (event) => {
      state.explain = event.target.value;
      renderViewSelect();
      renderDetail();
    });
    $("search").addEventListener("input", applyFilter);
    $("wrong-only").addEventListener("change", applyFilter);
    const list = $("example-list");
    list.addEventListener("click", (event) => {
      const item = event.target.closest("li");
      if (item) choose(Number(item.dataset.index));
    });
    list.addEventListener("keydown", onListKey);
    $("probe-select").addEventListener("change", (event) => {
      state.probe = Number(event.target.value);
      renderSnapshot();
    });
    $("epoch-slider").addEventListener("input", (event) => {
      stopPlaying();
      state.epoch = Number(event.target.value);
      renderSnapshot();
    });
    $("play").addEventListener("click", togglePlay);
    setModel(doc.opens_on || 0);
    window.explorerRenderMs = performance.now() - started;
    document.body.dataset.ready = "true";
  }

  start();
})();
