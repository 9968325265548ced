// Bidirectional-control characters in names users choose. U+202E (RIGHT-TO-LEFT OVERRIDE) in a job
// name turns what follows around on screen ("report\u202Efdp.exe" shows as "reportexe.pdf"), and
// an unclosed one reorders the text after it, in the same cell or beyond. Every string the
// dashboard shows goes through `plain`, which writes such a character out as [U+202E]; CSS
// isolates each cell and link too (style.css), so right-to-left names are shown as written
// without reordering their neighbours. Pure functions (unit-tested in test/bidi.test.ts).

/** The explicit directional formatting characters (Unicode UAX #9): embeddings, overrides,
 * isolates, their terminators, and the implicit marks (LRM, RLM, ALM). */
const BIDI_CONTROLS = /[\u061C\u200E\u200F\u202A-\u202E\u2066-\u2069]/g;

/** s with each bidirectional-control character written out as [U+XXXX]. */
export function plain(s: string): string {
  BIDI_CONTROLS.lastIndex = 0;
  if (!BIDI_CONTROLS.test(s)) return s;
  return s.replace(BIDI_CONTROLS, (c) => `[U+${c.charCodeAt(0).toString(16).toUpperCase().padStart(4, "0")}]`);
}

/** The attributes whose text is shown (tooltips, alternative text, placeholders, labels). */
const SHOWN_PROPS = ["title", "alt", "placeholder", "aria-label"];

/** A view-library node as Preact's `options.vnode` hook sees it: a text node has type null and
 * its text as props; an element has its attributes in props. */
export interface VNodeLike {
  type: unknown;
  props: unknown;
}

/** Makes what vnode shows plain: its text, or the shown attributes of an element. Form values
 * and links are left as they are, so a filter or link still names what the data names. */
export function guardVNode(vnode: VNodeLike): void {
  if (vnode.type === null) {
    if (typeof vnode.props === "string") vnode.props = plain(vnode.props);
    return;
  }
  if (typeof vnode.type !== "string" || !vnode.props || typeof vnode.props !== "object") return;
  const props = vnode.props as Record<string, unknown>;
  for (const k of SHOWN_PROPS) {
    const v = props[k];
    if (typeof v === "string") props[k] = plain(v);
  }
}

/** Installs guardVNode as the view library's vnode hook (options: Preact's `options`), after any
 * hook installed before. */
export function installBidiGuard(options: { vnode?: (v: any) => void }): void {
  const before = options.vnode;
  options.vnode = (v) => {
    guardVNode(v);
    if (before) before(v);
  };
}
