/**
 * Lease owner ids: which process holds a lease, so a lease whose process is gone from this
 * machine can be taken over at once — and a live process's lease never is.
 */
import { spawn } from "node:child_process";
import { once } from "node:events";
import { readFileSync } from "node:fs";
import { hostname } from "node:os";
import { leaseOwner, ownerIsGone } from "quiver-agents/store";
import { afterEach, describe, expect, it } from "vitest";

const children: Array<ReturnType<typeof spawn>> = [];
afterEach(() => {
  for (const child of children.splice(0)) child.kill("SIGKILL");
});

function liveChild() {
  const child = spawn(process.execPath, ["-e", "setTimeout(() => {}, 20000)"], { stdio: "ignore" });
  children.push(child);
  return child;
}

/** An owner id for process `pid`, as that process's own leaseOwner() would read (start time from /proc). */
function ownerOf(
  pid: number,
  startTime = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]!.split(" ")[19],
) {
  const [host, , nonce, machine] = leaseOwner().split(":");
  return `${host}:${pid}:${nonce}:${machine!.split(".")[0]}.${startTime}`;
}

describe("lease owner ids", () => {
  it("name the host and process, and differ for every driver", () => {
    const a = leaseOwner();
    const b = leaseOwner();
    expect(a).not.toBe(b);
    expect(a.startsWith(`${hostname()}:${process.pid}:`)).toBe(true);
  });

  it("read as gone once their process exits, and as alive while it runs", async () => {
    const child = liveChild();
    await new Promise((r) => setTimeout(r, 50));
    const owner = ownerOf(child.pid!);
    expect(ownerIsGone(owner)).toBe(false);
    child.kill("SIGKILL");
    await once(child, "exit");
    expect(ownerIsGone(owner)).toBe(true);
  });

  it("read as gone when the pid now belongs to a process that started later (pid reuse)", () => {
    expect(ownerIsGone(ownerOf(process.ppid))).toBe(false);
    expect(ownerIsGone(ownerOf(process.ppid, "1"))).toBe(true);
  });

  it("never judge this process, another host, another machine or pid namespace, or an id of another form", async () => {
    expect(ownerIsGone(leaseOwner())).toBe(false);
    const child = spawn(process.execPath, ["-e", "0"], { stdio: "ignore" });
    await once(child, "exit");
    const dead = ownerOf(child.pid!, "5");
    expect(ownerIsGone(dead)).toBe(true);
    const [, pid, nonce, machine] = dead.split(":");
    expect(ownerIsGone(`elsewhere.example:${pid}:${nonce}:${machine}`)).toBe(false);
    expect(ownerIsGone(`${hostname()}:${pid}:${nonce}:0123456789abcdef.5`)).toBe(false);
    expect(ownerIsGone(`${hostname()}:${pid}:${nonce}`)).toBe(false);
    expect(ownerIsGone("worker-a")).toBe(false);
    expect(ownerIsGone("")).toBe(false);
  });
});
