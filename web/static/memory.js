// What Ava remembers, drawn as a graph: a small force layout in plain SVG (no library).
// A node whose every fact has been replaced is drawn hollow and dashed; choosing a node
// (click, or Enter on a focused node) lists its facts with since when each held and when
// it stopped holding.

import { api, el, when } from "./api.js";

const $ = (id) => document.getElementById(id);
const SVG = "http://www.w3.org/2000/svg";
const WIDTH = 600;
const HEIGHT = 400;
const STEPS = 300;

function svg(tag, attributes = {}) {
  const node = document.createElementNS(SVG, tag);
  for (const [key, value] of Object.entries(attributes)) node.setAttribute(key, String(value));
  return node;
}

// Repulsion between every pair, springs along edges, a pull to the centre; a fixed number
// of cooling steps, so the layout is the same every time for the same graph.
function layout(nodes, edges) {
  const points = new Map(
    nodes.map((n, i) => {
      const angle = (2 * Math.PI * i) / Math.max(nodes.length, 1);
      return [n.id, { x: WIDTH / 2 + 120 * Math.cos(angle), y: HEIGHT / 2 + 120 * Math.sin(angle), dx: 0, dy: 0 }];
    }),
  );
  const list = [...points.values()];
  for (let step = 0; step < STEPS; step += 1) {
    const heat = 1 - step / STEPS;
    for (const p of list) (p.dx = (WIDTH / 2 - p.x) * 0.01), (p.dy = (HEIGHT / 2 - p.y) * 0.01);
    for (let i = 0; i < list.length; i += 1) {
      for (let j = i + 1; j < list.length; j += 1) {
        const a = list[i];
        const b = list[j];
        const dx = a.x - b.x || 0.01;
        const dy = a.y - b.y || 0.01;
        const force = 2000 / Math.max(dx * dx + dy * dy, 1);
        a.dx += dx * force * 0.05; a.dy += dy * force * 0.05;
        b.dx -= dx * force * 0.05; b.dy -= dy * force * 0.05;
      }
    }
    for (const edge of edges) {
      const a = points.get(edge.source);
      const b = points.get(edge.target);
      if (!a || !b) continue;
      const dx = b.x - a.x;
      const dy = b.y - a.y;
      const pull = (Math.hypot(dx, dy) - 110) * 0.02;
      const angle = Math.atan2(dy, dx);
      a.dx += Math.cos(angle) * pull; a.dy += Math.sin(angle) * pull;
      b.dx -= Math.cos(angle) * pull; b.dy -= Math.sin(angle) * pull;
    }
    for (const p of list) {
      p.x = Math.min(WIDTH - 40, Math.max(40, p.x + p.dx * heat));
      p.y = Math.min(HEIGHT - 20, Math.max(20, p.y + p.dy * heat));
    }
  }
  return points;
}

function factItem(edge, names) {
  const state = edge.valid
    ? el("span", { class: "detail", text: `true since ${when(edge.valid_at)}` })
    : el("span", { class: "invalid-label", text: `no longer true (since ${when(edge.invalid_at ?? edge.valid_at)})` });
  const item = el("li", { "data-edge": edge.id, "data-valid": String(edge.valid) },
    el("div", {}, el("div", { text: edge.text }), el("div", { class: "detail", text: `${names.get(edge.source)} · ${edge.relation.replaceAll("_", " ")} · ${names.get(edge.target)}` })),
    state);
  return item;
}

function choose(node, edges, names) {
  const mine = edges.filter((e) => e.source === node.id || e.target === node.id);
  const heading = el("h3", { text: node.name });
  const status = node.invalid ? el("p", { class: "invalid-label", text: "No longer true: every fact about it has been replaced." }) : el("p", { text: node.type });
  $("fact").replaceChildren(heading, status, el("ul", { class: "rows" }, ...mine.map((e) => factItem(e, names))));
  $("fact").dataset.node = node.id;
}

export async function show() {
  const graph = await api("GET", "/v1/knowledge");
  const names = new Map(graph.nodes.map((n) => [n.id, n.is_self ? "You" : n.name]));
  for (const node of graph.nodes) {
    const touching = graph.edges.filter((e) => e.source === node.id || e.target === node.id);
    node.invalid = !node.is_self && touching.length > 0 && touching.every((e) => !e.valid);
  }
  const points = layout(graph.nodes, graph.edges);
  const drawing = $("graph");
  drawing.replaceChildren();
  for (const edge of graph.edges) {
    const a = points.get(edge.source);
    const b = points.get(edge.target);
    if (!a || !b) continue;
    drawing.append(svg("line", { class: edge.valid ? "edge" : "edge invalid", x1: a.x, y1: a.y, x2: b.x, y2: b.y }));
  }
  for (const node of graph.nodes) {
    const p = points.get(node.id);
    const group = svg("g", { class: node.invalid ? "node invalid" : "node", transform: `translate(${p.x},${p.y})`, tabindex: 0, role: "button", "data-name": node.name, "aria-label": `${names.get(node.id)}${node.invalid ? ", no longer true" : ""}` });
    group.append(svg("circle", { r: node.is_self ? 14 : 10 }));
    const label = svg("text", { x: 14, y: 4 });
    label.textContent = names.get(node.id);
    group.append(label);
    group.addEventListener("click", () => choose(node, graph.edges, names));
    group.addEventListener("keydown", (event) => {
      if (event.key === "Enter" || event.key === " ") {
        event.preventDefault();
        choose(node, graph.edges, names);
      }
    });
    drawing.append(group);
  }
  $("facts").replaceChildren(
    ...(graph.edges.length ? graph.edges.map((e) => factItem(e, names)) : [el("li", { text: "Nothing yet: tell Ava about yourself." })]),
  );
}
