import { execFile } from "node:child_process";
import { existsSync, realpathSync } from "node:fs";
import { access, constants, stat } from "node:fs/promises";
import path from "node:path";

/** `shell: { sandbox }`: run every command in bubblewrap, when it can ("auto"), always ("required"), or never. */
export type SandboxMode = "required" | "auto" | "off";

/** Where a command runs: in bubblewrap (this binary), or outside any sandbox and why. */
export type SandboxPlan = { bwrap: string } | { unavailable: string };

/** Capabilities root keeps inside the sandbox: enough to own and change the workspace's files, nothing to undo the mounts. */
const ROOT_CAPABILITIES = ["CAP_CHOWN", "CAP_DAC_OVERRIDE", "CAP_FOWNER", "CAP_FSETID"];

/**
 * bubblewrap's arguments for one command: a PID namespace of its own (when the command ends,
 * everything it started ends: nothing outlives the call), the workspace root bound writable,
 * the rest of the file system read-only (with `/proc/sys` too), a private `/tmp` and `/run`
 * (empty, discarded after the call; `/run` hides the sockets of system daemons and of the
 * user's session), a minimal `/dev`, no network unless `network` (a namespace of its own
 * holding only a loopback interface, not the host's), all capabilities dropped (root keeps
 * only those that act on files it may write), and `--die-with-parent`. `readOnly` paths inside
 * the root (its `.git`, hooks, environment and editor settings) are mounted read-only over the
 * writable root: a command must not plant what the user's own git or editor runs later,
 * outside the sandbox. A path gone by the time bwrap starts is skipped (`--ro-bind-try`).
 */
export function bwrapArguments(request: {
  root: string;
  command: string;
  network: boolean;
  readOnly?: readonly string[];
}): string[] {
  const { root, command, network, readOnly = [] } = request;
  const args = [
    "--ro-bind",
    "/",
    "/",
    "--dev",
    "/dev",
    "--proc",
    "/proc",
    "--ro-bind",
    "/proc/sys",
    "/proc/sys",
  ];
  args.push("--tmpfs", "/tmp");
  if (existsSync("/run")) {
    args.push("--tmpfs", "/run");
    // Name lookups through a resolver whose file lives under /run (systemd-resolved) keep working.
    const resolver = resolverDirectory();
    if (network && resolver) args.push("--ro-bind", resolver, resolver);
  }
  args.push("--bind", root, root);
  for (const inside of readOnly) args.push("--ro-bind-try", inside, inside);
  args.push("--unshare-pid", "--unshare-ipc");
  if (!network) args.push("--unshare-net");
  args.push("--die-with-parent", "--cap-drop", "ALL");
  if (process.getuid?.() === 0) for (const cap of ROOT_CAPABILITIES) args.push("--cap-add", cap);
  args.push("--chdir", root, "--", "bash", "-c", command);
  return args;
}

function resolverDirectory(): string | undefined {
  try {
    const target = realpathSync("/etc/resolv.conf");
    return target.startsWith("/run/") ? path.dirname(target) : undefined;
  } catch {
    return undefined;
  }
}

/** Probes per bwrap binary: a kernel without user or PID namespaces makes bwrap fail at once, every time. */
const probes = new Map<string, Promise<string | undefined>>();

/**
 * Whether commands can run in bubblewrap here: `bwrap` found on the command's `PATH` and a
 * trivial command run in the same sandbox succeeded (probed once per binary and cached).
 */
export async function planSandbox(searchPath: string | undefined, root: string): Promise<SandboxPlan> {
  if (process.platform !== "linux") return { unavailable: "bubblewrap needs Linux" };
  const bwrap = await findExecutable("bwrap", searchPath);
  if (!bwrap) return { unavailable: "bwrap (bubblewrap) is not on PATH" };
  let probe = probes.get(bwrap);
  if (!probe) {
    probe = runProbe(bwrap, root);
    probes.set(bwrap, probe);
  }
  const failure = await probe;
  return failure === undefined ? { bwrap } : { unavailable: failure };
}

function runProbe(bwrap: string, root: string): Promise<string | undefined> {
  const args = bwrapArguments({ root, command: "true", network: false });
  // `bash -c true` goes through the same PATH lookup a real command does.
  return new Promise((resolve) => {
    execFile(bwrap, args, { timeout: 10_000 }, (error, _stdout, stderr) => {
      if (!error) return resolve(undefined);
      const why = (stderr || error.message).trim().split("\n")[0];
      resolve(`bwrap cannot create its sandbox here (${why})`);
    });
  });
}

async function findExecutable(name: string, searchPath: string | undefined): Promise<string | undefined> {
  for (const dir of (searchPath ?? "").split(path.delimiter)) {
    if (!dir || !path.isAbsolute(dir)) continue;
    const candidate = path.join(dir, name);
    try {
      await access(candidate, constants.X_OK);
      if ((await stat(candidate)).isFile()) return candidate;
    } catch {
      // Not here.
    }
  }
  return undefined;
}
