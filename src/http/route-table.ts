/** Which methods each route pattern answers, for 405 with an Allow header. */
export class RouteTable {
  private readonly routes: { re: RegExp; method: string }[] = []

  add(method: string, pattern: string) {
    pattern = pattern.replace(/(.)\/$/, '$1')
    const re = new RegExp(`^${pattern.replace(/[.+?^${}()|[\]\\]/g, '\\$&').replace(/:[^/]+/g, '[^/]+').replace(/\*/g, '.*')}/?$`)
    this.routes.push({ re, method: method.toUpperCase() })
  }

  methodsFor(path: string): string[] {
    return [...new Set(this.routes.filter((r) => r.re.test(path)).map((r) => r.method))]
  }
}
