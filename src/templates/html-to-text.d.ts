// html-to-text (also mailparser's) ships no types; only what the template renderer uses.
declare module 'html-to-text' {
  export function compile(options?: Record<string, unknown>): (html: string) => string
}
