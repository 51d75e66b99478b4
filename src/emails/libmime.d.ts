// libmime comes with mailparser and nodemailer and ships no types; only what the MIME tree uses.
declare module 'libmime' {
  interface Libmime {
    decodeWords(str: string): string
    parseHeaderValue(str: string): { value: string | false; params: Record<string, string> }
  }
  const libmime: Libmime
  export default libmime
}
