/**
 * JSON text without its `managedFields`, cut before it is parsed. kube-apiserver v1.37.2 sends every
 * object's managedFields in lists and watches (a client opt-out is KEP-5958, not in that version),
 * and in volumes and claims they are 45-48% of the bytes: parsing them only to drop them (the
 * informers' default projection) costs about a third of each list page's JSON.parse and garbage
 * (hack/bench/README.md, "managedFields cut before parsing").
 *
 * Removes every object member named `managedFields` whose value is an array, at any depth, from
 * compact JSON (no whitespace between tokens, as kube-apiserver writes it). A match is a member and
 * nothing else: the needle starts with an unescaped quote (an escaped one follows a backslash, not
 * the `{` or `,` required before it), and a quote that closed a string cannot be followed by
 * `managedFields`. Strings inside the array are skipped whole, escapes included, so a bracket in a
 * field manager's name or a `k:{...}` key cannot end it early. Anything unexpected leaves text as
 * the server sent it: a space before the member (or after its colon) leaves that member, a space
 * after it or an array that does not end leaves the whole text. Linear in the text: no part of it
 * is scanned twice.
 */
const NEEDLE = '"managedFields":[';
const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const COMMA = 0x2c;
const OPEN_ARRAY = 0x5b;
const CLOSE_ARRAY = 0x5d;
const OPEN_OBJECT = 0x7b;
const CLOSE_OBJECT = 0x7d;

export function withoutManagedFields(json: string): string {
  let at = json.indexOf(NEEDLE);
  if (at === -1) return json;
  const kept: string[] = [];
  let from = 0;
  while (at !== -1) {
    const before = json.charCodeAt(at - 1);
    if (before !== COMMA && before !== OPEN_OBJECT) {
      // The end of a longer key (`"x\\"managedFields"`): not this member, and members inside its
      // value still are one. Checked before any scan, so no part of the text is scanned twice.
      at = json.indexOf(NEEDLE, at + 1);
      continue;
    }
    const end = valueEnd(json, at + NEEDLE.length - 1);
    if (end === -1) return json;
    const after = json.charCodeAt(end);
    if (after !== COMMA && after !== CLOSE_OBJECT) return json;
    // `at === from`: the comma before it went with a member cut just before (a duplicate key), so
    // it is now the first member of its object.
    if (before === COMMA && at !== from) {
      // `,"managedFields":[...]` goes with the comma before it.
      kept.push(json.slice(from, at - 1));
      from = end;
    } else {
      // `{"managedFields":[...],` with the comma after it, if any.
      kept.push(json.slice(from, at));
      from = after === COMMA ? end + 1 : end;
    }
    at = json.indexOf(NEEDLE, end);
  }
  kept.push(json.slice(from));
  return kept.join('');
}

/** The index just past the array or object that opens at `open`, or -1 if the text ends first. */
function valueEnd(json: string, open: number): number {
  let depth = 0;
  for (let i = open; i < json.length; i++) {
    const c = json.charCodeAt(i);
    if (c === QUOTE) {
      i = stringEnd(json, i);
      if (i === -1) return -1;
    } else if (c === OPEN_ARRAY || c === OPEN_OBJECT) {
      depth++;
    } else if (c === CLOSE_ARRAY || c === CLOSE_OBJECT) {
      if (--depth === 0) return i + 1;
    }
  }
  return -1;
}

/** The index of the quote that closes the string opening at `open`, or -1. */
function stringEnd(json: string, open: number): number {
  let q = open;
  for (;;) {
    q = json.indexOf('"', q + 1);
    if (q === -1) return -1;
    // Escaped when an odd number of backslashes precede it.
    let b = q - 1;
    while (json.charCodeAt(b) === BACKSLASH) b--;
    if ((q - 1 - b) % 2 === 0) return q;
  }
}

/**
 * Which answers are parsed without their managedFields: every one (true), none (false), or those
 * whose text names none of some field managers (`unlessNaming`), for readers that look only at
 * those managers' entries: an entry carries its manager's name as text, so an answer that does not
 * contain the name has no entry of that manager (kube-apiserver writes names of letters, digits and
 * `-._:/ ` unescaped; RawObservers takes no other name).
 */
export type ManagedFieldsCut = boolean | { readonly unlessNaming: readonly string[] };

/** The text, without its managedFields where `cut` says so. */
export function cutManagedFields(json: string, cut: ManagedFieldsCut | undefined): string {
  if (!cut) return json;
  if (cut !== true && cut.unlessNaming.some((name) => json.includes(name))) return json;
  return withoutManagedFields(json);
}

/** Whether two cuts parse every answer alike. */
export function sameCut(a: ManagedFieldsCut, b: ManagedFieldsCut): boolean {
  if (typeof a === 'boolean' || typeof b === 'boolean') return a === b;
  return a.unlessNaming.length === b.unlessNaming.length && a.unlessNaming.every((n, i) => n === b.unlessNaming[i]);
}
