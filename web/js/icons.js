// Inline SVG icons (instead of emoji, which render differently — or not at all — per platform and
// font). Built with the DOM, so they pass the page's Content-Security-Policy. Paths: 24×24 grid,
// stroke-drawn in the current text colour.

const SVG_NS = "http://www.w3.org/2000/svg";

const PATHS = {
  "thumbs-up": ["M7 10v11", "M7 10l4-7a2 2 0 0 1 3 2v4h5.5a2 2 0 0 1 2 2.4l-1.4 7A2 2 0 0 1 18.1 21H7", "M3 10h4v11H3z"],
  "thumbs-down": ["M17 14V3", "M17 14l-4 7a2 2 0 0 1-3-2v-4H4.5a2 2 0 0 1-2-2.4l1.4-7A2 2 0 0 1 5.9 3H17", "M21 14h-4V3h4z"],
  check: ["M5 12.5l4.5 4.5L19 7.5"],
  x: ["M6 6l12 12", "M18 6L6 18"],
  play: ["M8 5.5v13l10-6.5z"],
  stop: ["M7 7h10v10H7z"],
  clock: ["M12 7v5l3 2", "M12 3a9 9 0 1 0 0 18a9 9 0 0 0 0-18z"],
  file: ["M14 3H6v18h12V7z", "M14 3v4h4", "M9 13h6", "M9 17h6"],
  search: ["M11 4a7 7 0 1 0 0 14a7 7 0 0 0 0-14z", "M16 16l5 5"],
};

/** icon("thumbs-up") → <svg class="icon" aria-hidden="true">; pass {label} when the icon alone
 *  carries meaning (then it is announced as an image with that name). */
export function icon(name, { label = "", cls = "" } = {}) {
  const svg = document.createElementNS(SVG_NS, "svg");
  svg.setAttribute("viewBox", "0 0 24 24");
  svg.setAttribute("class", `icon icon-${name}${cls ? ` ${cls}` : ""}`);
  svg.setAttribute("data-icon", name);
  svg.setAttribute("focusable", "false");
  if (label) {
    svg.setAttribute("role", "img");
    svg.setAttribute("aria-label", label);
  } else {
    svg.setAttribute("aria-hidden", "true");
  }
  for (const d of PATHS[name] || []) {
    const path = document.createElementNS(SVG_NS, "path");
    path.setAttribute("d", d);
    svg.append(path);
  }
  return svg;
}

/** Every element with data-icon="name" in static HTML gets its SVG (e.g. the stop button). */
export function fillIcons(root = document) {
  for (const el of root.querySelectorAll("[data-icon]:not(svg)")) {
    if (!el.querySelector("svg")) el.prepend(icon(el.dataset.icon));
  }
}
