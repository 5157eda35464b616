// bench/js-count.sh: N GETs, one after another, through the bundle's fetch
// handler, each with the headers cost-client.mjs sends.
//   node --import ./runtime.mjs client.mjs BUNDLE N
const [bundle, n] = [process.argv[2], Number(process.argv[3])];
const handler = (await import(bundle)).default;
const headers = new Headers();
headers.set("host", "example.com");
headers.set("x-user", "user-1");
headers.set("connection", "keep-alive");
const request = { url: "http://example.com/2k.bin", method: "GET", body: null, headers };
const ctx = { waitUntil() {} };
for (let i = 0; i < n; i++) {
  const res = await handler.fetch(request, {}, ctx);
  if (res.status !== 200) throw new Error(`bench/js-count: status ${res.status}`);
}
