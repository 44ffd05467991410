/**
 * The only way the page turns data into DOM: elements by name, and every value as a text node.
 * Namespaces, candidate ids and metadata are untrusted: nothing here parses markup.
 */

export type Child = Node | string | number | null | undefined | false;

export interface Props {
  /** CSS classes, space-separated. */
  readonly class?: string;
  /** Tooltip text. */
  readonly title?: string;
  /** Only the page's own routes (`#/…`). */
  readonly href?: string;
  /** `data-*` attributes (keys without the prefix), for styles and tests. */
  readonly data?: Readonly<Record<string, string>>;
  /** Other attributes the page sets itself (aria, type, value…). */
  readonly attrs?: Readonly<Record<string, string>>;
}

/** A value as a text node: never markup. */
export function textOf(value: string): Node {
  return document.createTextNode(value);
}

function toNode(child: Exclude<Child, null | undefined | false>): Node {
  return typeof child === 'string' || typeof child === 'number' ? textOf(String(child)) : child;
}

/** `<tag>` with `props` and `children` (strings become text). */
export function h<K extends keyof HTMLElementTagNameMap>(tag: K, props?: Props | null, ...children: Child[]): HTMLElementTagNameMap[K] {
  const element = document.createElement(tag);
  if (props?.class) element.className = props.class;
  if (props?.title !== undefined) element.title = props.title;
  if (props?.href !== undefined) {
    if (!props.href.startsWith('#')) throw new Error('dashboard: links go to the page\'s own routes only');
    element.setAttribute('href', props.href);
  }
  for (const [key, value] of Object.entries(props?.data ?? {})) element.dataset[key] = value;
  for (const [key, value] of Object.entries(props?.attrs ?? {})) {
    if (/^on/i.test(key) || key === 'style' || key === 'href' || key === 'src') throw new Error(`dashboard: attribute ${key} is not set this way`);
    element.setAttribute(key, value);
  }
  append(element, ...children);
  return element;
}

export function append(parent: Node, ...children: Child[]): void {
  for (const child of children) if (child !== null && child !== undefined && child !== false) parent.appendChild(toNode(child));
}

/** Replaces the element's content with `children`. */
export function fill(element: Element, ...children: Child[]): void {
  element.replaceChildren();
  append(element, ...children);
}

/** The element with this id (the page's skeleton has it). */
export function byId(id: string): HTMLElement {
  const element = document.getElementById(id);
  if (!element) throw new Error(`dashboard: #${id} is missing from the page`);
  return element;
}
