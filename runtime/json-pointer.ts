/** The unescaped parts of a JSON pointer ("/a~1b/c" -> ["a/b", "c"]); "" gives []. */
export function pointerParts(pointer: string): string[] {
  return pointer
    .split('/')
    .slice(1)
    .map((p) => p.replace(/~1/g, '/').replace(/~0/g, '~'));
}
