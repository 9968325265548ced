import { test } from "node:test";
import assert from "node:assert/strict";
import { guardVNode, installBidiGuard, plain } from "../src/lib/bidi";

test("bidirectional controls are written out, other text is kept", () => {
  assert.equal(plain("report\u202Efdp.exe"), "report[U+202E]fdp.exe");
  assert.equal(plain("\u2066a\u2069\u200F\u061C"), "[U+2066]a[U+2069][U+200F][U+061C]");
  assert.equal(plain("a\u202Ab\u202Bc\u202Cd\u202De"), "a[U+202A]b[U+202B]c[U+202C]d[U+202D]e");
  const hebrew = "\u05e9\u05dc\u05d5\u05dd"; // right-to-left letters themselves are names, kept
  assert.equal(plain(hebrew), hebrew);
  assert.equal(plain("plain"), "plain");
  assert.equal(plain(""), "");
  // the global pattern keeps no state between calls
  assert.equal(plain("x\u202E"), "x[U+202E]");
  assert.equal(plain("y\u202E"), "y[U+202E]");
});

test("text nodes and shown attributes are made plain; links and form values are not", () => {
  const text = { type: null, props: "job \u202Egnp.exe" };
  guardVNode(text);
  assert.equal(text.props, "job [U+202E]gnp.exe");
  const el = { type: "a", props: { title: "u\u202E", href: "/ui/jobs?user=u\u202E", "aria-label": "\u2067x" } };
  guardVNode(el);
  assert.equal(el.props.title, "u[U+202E]");
  assert.equal(el.props["aria-label"], "[U+2067]x");
  assert.equal(el.props.href, "/ui/jobs?user=u\u202E", "the link still names the user as stored");
  const input = { type: "input", props: { value: "a\u202Eb" } };
  guardVNode(input);
  assert.equal(input.props.value, "a\u202Eb");
  const component = { type: () => null, props: { title: "\u202E" } };
  guardVNode(component);
  assert.equal(component.props.title, "\u202E", "a component's props are its own business");
});

test("the hook runs before one installed earlier", () => {
  const seen: string[] = [];
  const options: { vnode?: (v: any) => void } = { vnode: (v) => seen.push(v.props) };
  installBidiGuard(options);
  options.vnode!({ type: null, props: "\u202Ex" });
  assert.deepEqual(seen, ["[U+202E]x"]);
});
