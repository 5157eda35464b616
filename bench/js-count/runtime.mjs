// bench/js-count.sh: minimal stand-ins for the runtime's Headers, Response,
// fetch and addEventListener, loaded before the bundle (node --import). They
// are the same for every build, so a difference in the count is the fast
// path's own JavaScript; their own cost is in the figure, so compare two
// builds, never this figure with a workerd one.
globalThis.Headers = class Headers {
  constructor(init) {
    this.map = new Map(init instanceof Headers ? init.map : undefined);
  }
  get(name) {
    return this.map.get(name.toLowerCase()) ?? null;
  }
  set(name, value) {
    this.map.set(name.toLowerCase(), String(value));
  }
  append(name, value) {
    this.map.set(name.toLowerCase(), String(value));
  }
  delete(name) {
    this.map.delete(name.toLowerCase());
  }
  has(name) {
    return this.map.has(name.toLowerCase());
  }
};
globalThis.Response = class Response {
  constructor(body, init) {
    this.body = body;
    this.status = init?.status ?? 200;
    this.headers = new Headers(init?.headers);
  }
};
const answer = new Response(null, { status: 200 });
globalThis.fetch = () => Promise.resolve(answer);
globalThis.addEventListener = () => {};
