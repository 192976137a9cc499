// The worker-thread side of grep_files' Node search (see search-threads.ts): one request at a
// time, each answered with its result; the thread stays up for the next one.
import { parentPort } from "node:worker_threads";
import { type SearchRequest, searchTree } from "./grep-search.js";

parentPort!.on("message", (request: SearchRequest) => {
  try {
    parentPort!.postMessage({ ok: true, result: searchTree(request) });
  } catch (error) {
    parentPort!.postMessage({ ok: false, message: error instanceof Error ? error.message : String(error) });
  }
});
