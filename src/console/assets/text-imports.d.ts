// The console's browser files are served as text, never run by Bun: these
// declarations type their text imports (src/console/assets.ts).
declare module '*.js' {
  const text: string
  export default text
}
declare module '*.css' {
  const text: string
  export default text
}
