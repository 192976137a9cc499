import { EXIT } from "./usage.js";

let interrupted = false;

/**
 * Records that this command ends because of a Ctrl+C: the SIGINT a terminal sends, or the key
 * itself when a prompt reads the keyboard in raw mode (no signal then).
 */
export function noteInterrupt(): void {
  interrupted = true;
}

/**
 * Ends the process with `code`. A command a Ctrl+C ended (130) ends by SIGINT itself, once its
 * cleanup is done, as programs do: a shell script's loop around it stops instead of going on
 * with the next command, and a parent sees the same signal death whether it started the bin
 * directly or through `npx` (npm ends itself by SIGINT after a Ctrl+C reached it).
 *
 * @example
 * exitProcess(await main(argv));
 */
export function exitProcess(code: number): void {
  if (code === EXIT.cancelled && interrupted && process.platform !== "win32") {
    process.removeAllListeners("SIGINT");
    process.kill(process.pid, "SIGINT");
    // Still here: SIGINT is ignored (a parent started us with it ignored, like `nohup`).
  }
  process.exit(code);
}
