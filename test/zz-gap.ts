import pg from "pg";
const orig = pg.Client.prototype.query;
const gaps: number[] = [], qs: number[] = [];
let lastDone = 0;
(pg.Client.prototype as any).query = function (text: any, ...rest: any[]) {
  const t = typeof text === "string" ? text : text?.text ?? "?";
  const isAppend = t.includes("quiver_append_v");
  const t0 = performance.now();
  if (isAppend && lastDone) gaps.push(t0 - lastDone);
  const p = (orig as any).call(this, text, ...rest);
  if (isAppend) p.then(() => { lastDone = performance.now(); qs.push(lastDone - t0); });
  return p;
};
const pc = (d: number[]) => { d.sort((a, b) => a - b); return [0.1, 0.25, 0.5, 0.75, 0.9].map((q) => (d[Math.floor(q * d.length)]! * 1000).toFixed(0)).join(" "); };
process.on("exit", () => { console.log("gap pctl µs", pc(gaps)); console.log("query pctl µs", pc(qs)); });
