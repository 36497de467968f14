"use strict";
// pearl-verl view: the page's only script. Text from the data enters the page as text nodes only.
async function unpack() {
  // the data block: base64 of gzip-compressed JSON (see pearl_verl/view/page.py)
  const text = atob(document.getElementById("pearl-data").textContent.trim());
  const bytes = new Uint8Array(text.length);
  for (let i = 0; i < text.length; i++) bytes[i] = text.charCodeAt(i);
  const stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream("gzip"));
  return JSON.parse(await new Response(stream).text());
}
unpack().then(function (DATA) {
  const R = DATA.records, DIMS = DATA.dims, PROBLEMS = DATA.problems, CRITERIA = DATA.criteria;
  const PAGE = 200;
  let matches = [], shown = PAGE, current = null;

  function el(tag, attrs, ...children) {
    const node = document.createElement(tag);
    for (const [key, value] of Object.entries(attrs || {})) {
      if (key === "class") node.className = value;
      else if (key === "on") for (const [event, fn] of Object.entries(value)) node.addEventListener(event, fn);
      else node.setAttribute(key, String(value));
    }
    for (const child of children.flat()) {
      if (child === null || child === undefined) continue;
      node.append(child instanceof Node ? child : document.createTextNode(String(child)));
    }
    return node;
  }
  const fmt = (x) => (x === undefined || x === null ? "–" : Number(x).toFixed(3));
  const problem = (r) => PROBLEMS[r.p] || ["", "", ""];
  const byId = (id) => document.getElementById(id);

  function options(values, all) {
    return [el("option", { value: "" }, all), ...values.map((v) => el("option", { value: v }, v))];
  }
  const distinct = (key) => [...new Set(R.map((r) => r[key]).filter((v) => v !== undefined))].sort((a, b) =>
    typeof a === "number" && typeof b === "number" ? a - b : String(a).localeCompare(String(b)));

  function controls() {
    const flagNames = Object.keys(DATA.flags);
    return el("div", { class: "filters" },
      el("label", {}, "step ", el("select", { id: "f-step" }, options(distinct("st").map(String), "all"))),
      el("label", {}, "source ", el("select", { id: "f-source" }, options(distinct("s"), "all"))),
      el("label", {}, "problem ", el("input", { id: "f-problem", type: "search", placeholder: "id or words" })),
      el("label", {}, "ability ", el("select", { id: "f-ability" }, options(distinct("ab"), "all"))),
      el("label", {}, "profile ", el("input", { id: "f-profile", type: "search", placeholder: "e.g. per=1" })),
      el("label", {}, "end ", el("select", { id: "f-end" }, options(distinct("er"), "all"))),
      el("label", {}, "dimension ", el("select", { id: "f-dim" }, options(DIMS, "none")),
        el("input", { id: "f-min", type: "number", min: 0, max: 1, step: 0.05, placeholder: "min" }),
        el("input", { id: "f-max", type: "number", min: 0, max: 1, step: 0.05, placeholder: "max" })),
      el("label", {}, el("input", { id: "f-failed", type: "checkbox" }), " judge failures only"),
      el("label", {}, "flag ", el("select", { id: "f-flag" }, options(flagNames, "any or none"))),
      el("label", {}, "sort ", el("select", { id: "f-sort" },
        ["reward, high first", "reward, low first", "advantage, high first", "advantage, low first", "step", "id"]
          .map((label, i) => el("option", { value: String(i) }, label)))));
  }

  function filtered() {
    const v = (id) => byId(id).value;
    const step = v("f-step"), source = v("f-source"), words = v("f-problem").toLowerCase(), ability = v("f-ability");
    const profile = v("f-profile").toLowerCase(), end = v("f-end"), dim = DIMS.indexOf(v("f-dim")), flag = v("f-flag");
    const lo = v("f-min") === "" ? -Infinity : Number(v("f-min")), hi = v("f-max") === "" ? Infinity : Number(v("f-max"));
    const failed = byId("f-failed").checked;
    const out = R.filter((r) => {
      if (step && String(r.st) !== step) return false;
      if (source && r.s !== source) return false;
      if (words) {
        const [pid, question] = problem(r);
        if (!(pid.toLowerCase().includes(words) || question.toLowerCase().includes(words))) return false;
      }
      if (ability && r.ab !== ability) return false;
      if (profile && !(r.pf || "").toLowerCase().includes(profile)) return false;
      if (end && r.er !== end) return false;
      if (failed && r.ok !== 0) return false;
      if (flag && !(r.f || []).includes(flag)) return false;
      if (dim >= 0 && (lo > -Infinity || hi < Infinity)) {
        if (!r.d || r.d[dim] === null || r.d[dim] < lo || r.d[dim] > hi) return false;
      }
      return true;
    });
    const sort = Number(v("f-sort"));
    const key = [(r) => -(r.r ?? -Infinity), (r) => r.r ?? Infinity, (r) => -(r.a ?? -Infinity), (r) => r.a ?? Infinity,
      (r) => r.st ?? -1][sort];
    if (key) out.sort((a, b) => key(a) - key(b) || String(a.i).localeCompare(String(b.i)));
    else out.sort((a, b) => String(a.i).localeCompare(String(b.i)));
    return out;
  }

  function refresh() {
    matches = filtered();
    shown = PAGE;
    drawList();
  }

  function drawList() {
    const body = byId("list-body");
    body.replaceChildren(...matches.slice(0, shown).map((r) => el("tr", {
      class: "row" + (r === current ? " selected" : ""), "data-id": r.i, on: { click: () => showDialogue(r) },
    }, el("td", {}, r.i), el("td", {}, r.s), el("td", {}, r.st ?? ""), el("td", {}, problem(r)[0]),
    el("td", {}, r.ab ?? ""), el("td", {}, r.er ?? ""), el("td", { class: "num" }, fmt(r.r)),
    el("td", { class: "num" }, fmt(r.a)), el("td", { class: "flags" }, (r.f || []).join(" ")))));
    byId("count").textContent = `${matches.length} of ${R.length} dialogues match`;
    byId("more").hidden = matches.length <= shown;
  }

  function flagList(r) {
    if (!r.f || !r.f.length) return null;
    // bad_input lists what was wrong with the input (a score "high", NaN...), shown as missing
    return el("ul", { class: "flag-list" }, r.f.map((f) => el("li", { class: "flag" }, el("b", {}, f), ": ",
      DATA.flags[f] || "", f === "bad_input" && r.is ? el("ul", { class: "issues" }, r.is.map((s) => el("li", {}, s)))
        : null)));
  }

  function turnList(r, compact) {
    const leaks = new Set(r.lk || []);
    return el("ol", { class: "turns" }, r.t.map(([tutor, text, state], i) => el("li", {
      class: (tutor ? "turn tutor" : "turn student") + (leaks.has(i) ? " leak" : ""),
    }, el("span", { class: "who" }, tutor ? "tutor" : "student"), el("div", { class: "text" }, text),
    state && !compact ? el("div", { class: "state" },
      el("span", {}, "intent: ", (state[0] || []).join(", ") || "–"), el("span", {}, "attempt: ", state[1] || "–"),
      el("span", {}, "mastery: ", Object.entries(state[2] || {}).map(([u, m]) => `${u} ${m}`).join(", ") || "–"))
      : null)));
  }

  function scores(r) {
    const head = el("tr", {}, el("th", {}, "dimension"), el("th", {}, "score"), el("th", {}, "shaped r~"));
    const rows = DIMS.map((d, k) => el("tr", {}, el("td", {}, d), el("td", { class: "num" }, fmt(r.d && r.d[k])),
      el("td", { class: "num" }, fmt(r.sh && r.sh[k]))));
    return el("table", { class: "scores" }, head, rows);
  }

  function criteria(r) {
    if (!r.c) return null;
    return el("table", { class: "criteria" },
      el("tr", {}, el("th", {}, "dimension"), el("th", {}, "criterion"), el("th", {}, "score"), el("th", {}, "rationale")),
      r.c.map(([k, score, why]) => el("tr", {}, el("td", {}, (CRITERIA[k] || [])[0]), el("td", {}, (CRITERIA[k] || [])[1]),
        el("td", { class: "num" }, fmt(score)), el("td", {}, why))));
  }

  function judged(r) {
    const status = r.ok === undefined ? "not judged" : r.ok ? `judge ok, gate ${r.ga ?? "–"}` : "judge FAILED";
    return el("div", { class: "judge" }, el("p", {}, status, r.je ? el("span", { class: "error" }, " (", r.je, ")") : null),
      el("p", {}, "reward ", el("b", {}, fmt(r.r)), ", advantage ", el("b", {}, fmt(r.a))), scores(r), criteria(r));
  }

  function header(r) {
    const [pid, question, answer] = problem(r);
    const where = [r.s, r.st !== undefined ? `step ${r.st}` : null, r.g ? `group ${r.g}` : null, r.tu ? `tutor ${r.tu}` : null,
      r.ab ? `ability ${r.ab}` : null, r.pf, r.er ? `ended: ${r.er}` : null].filter(Boolean).join(" · ");
    return [el("h2", {}, r.i), el("p", { class: "meta" }, where),
      el("div", { class: "problem" }, el("b", {}, pid), " ", question, el("div", {}, "answer: ", answer)),
      r.mc ? el("div", { class: "misconception" }, "starts from: ", r.mc) : null, flagList(r)];
  }

  function showDialogue(r) {
    current = r;
    const group = r.g ? R.filter((x) => x.g === r.g && x.st === r.st) : [];
    const steps = new Set(R.filter((x) => x.p === r.p).map((x) => x.st));
    const buttons = el("div", { class: "buttons" },
      group.length > 1 ? el("button", { id: "btn-group", on: { click: () => showGroup(r) } },
        `group: ${group.length} dialogues side by side`) : null,
      steps.size > 1 ? el("button", { id: "btn-compare", on: { click: () => showCompare(r) } },
        "this problem at the first and last step") : null);
    byId("detail").replaceChildren(el("div", { id: "dialogue-view" }, header(r), buttons, turnList(r, false), judged(r)));
    drawList();
  }

  function column(r) {
    return el("div", { class: "col", "data-id": r.i }, el("h3", {}, r.i),
      el("p", { class: "meta" }, r.st !== undefined ? `step ${r.st} · ` : "", `reward ${fmt(r.r)} · advantage `,
        el("b", { class: "adv" }, fmt(r.a))), flagList(r), turnList(r, true));
  }

  function showGroup(r) {
    const members = R.filter((x) => x.g === r.g && x.st === r.st).sort((a, b) => (b.a ?? -Infinity) - (a.a ?? -Infinity));
    byId("detail").replaceChildren(el("div", { id: "group-view" },
      el("h2", {}, `group ${r.g}`, r.st !== undefined ? `, step ${r.st}` : ""),
      el("p", {}, "the contrast the update learns from: highest advantage first"),
      el("button", { on: { click: () => showDialogue(r) } }, "back to the dialogue"),
      el("div", { class: "columns" }, members.map(column))));
  }

  function showCompare(r) {
    const same = R.filter((x) => x.p === r.p && x.st !== undefined);
    const first = Math.min(...same.map((x) => x.st)), last = Math.max(...same.map((x) => x.st));
    const pick = (step) => same.find((x) => x.st === step && x.sl && x.sl === r.sl)
      || same.find((x) => x.st === step && x.s === r.s) || same.find((x) => x.st === step);
    byId("detail").replaceChildren(el("div", { id: "compare-view" },
      el("h2", {}, `${problem(r)[0]}: step ${first} and step ${last}`),
      el("button", { on: { click: () => showDialogue(r) } }, "back to the dialogue"),
      el("div", { class: "columns" }, [pick(first), pick(last)].map(column))));
  }

  document.body.append(
    el("header", {}, el("h1", {}, DATA.title), DATA.note ? el("p", { class: "note", id: "note" }, DATA.note) : null),
    controls(),
    el("main", {}, el("section", { class: "list" }, el("p", { id: "count" }),
      el("table", { id: "list" }, el("thead", {}, el("tr", {}, ["id", "source", "step", "problem", "ability", "end",
        "reward", "advantage", "flags"].map((h) => el("th", {}, h)))), el("tbody", { id: "list-body" })),
      el("button", { id: "more", on: { click: () => { shown += PAGE; drawList(); } } }, "show more")),
    el("section", { id: "detail", class: "detail" }, el("p", {}, "Pick a dialogue."))));
  // text boxes on "input" only: their "change" fires on blur, i.e. on the mousedown of a click in the list,
  // and redrawing the list then would swallow that click
  for (const node of document.querySelectorAll(".filters input, .filters select")) {
    const typing = node.tagName === "INPUT" && node.type !== "checkbox";
    node.addEventListener(typing ? "input" : "change", refresh);
  }
  refresh();
  document.body.setAttribute("data-ready", "1");
});
