// contextflow for OpenCode: one memory shared with Claude Code, Codex, Gemini CLI and Cursor.
//
// - The first prompt of a session gets contextflow's session start (the latest handoff of the
//   repository, open threads, recent sessions, the composed memory) as a text part added to that
//   prompt in every model request of the agent loop (not stored in the session, not sent to side
//   requests such as the title); a later prompt gets the results the last reply asked for with
//   <ctx:recall|status|expand>.
// - When a session goes idle (a turn ended) or was compacted, `contextflow hook stop` reads the
//   turn from what OpenCode recorded (its session database), stores it, and keeps the session's
//   automatic handoff current. It runs detached: OpenCode never waits for it.
//
// It runs the `contextflow` command you installed from the contextflow repository (the package
// named contextflow on PyPI is another project). `contextflow install opencode` writes this file
// with that command and the store settings in INSTALLED; a copy placed by hand looks for
// $CONTEXTFLOW_COMMAND, `contextflow` on PATH, then ~/.local/bin/contextflow.
// Turn it off: CONTEXTFLOW_CAPTURE=off, a .contextflow-capture-off file, or remove this file.
import { spawn } from "node:child_process"
import { closeSync, existsSync, openSync, statSync, unlinkSync, writeFileSync } from "node:fs"
import { homedir, tmpdir } from "node:os"
import { delimiter, join } from "node:path"

const INSTALLED = {} // filled by `contextflow install opencode`: {"command": [...], "env": {...}}
const TIMEOUT_MS = 30000 // a session start that takes longer is dropped, the prompt goes on
const MAX_OUTPUT = 1 << 20

function executable(path) {
  try {
    return statSync(path).isFile()
  } catch {
    return false
  }
}

function contextflowCommand() {
  if (Array.isArray(INSTALLED.command) && INSTALLED.command.length > 0) return INSTALLED.command
  const named = process.env.CONTEXTFLOW_COMMAND
  if (named && executable(named)) return [named]
  for (const dir of (process.env.PATH || "").split(delimiter)) {
    if (dir && executable(join(dir, "contextflow"))) return [join(dir, "contextflow")]
  }
  const local = join(process.env.XDG_BIN_HOME || join(homedir(), ".local", "bin"), "contextflow")
  return executable(local) ? [local] : null
}

const MISSING =
  "contextflow: the contextflow command was not found ($CONTEXTFLOW_COMMAND, PATH, ~/.local/bin). " +
  "Install it from the contextflow repository, not from PyPI (the PyPI package named contextflow is " +
  "another project): git clone <the repository URL> && sh contextflow/scripts/install, or " +
  "uv tool install git+<the repository URL>; then run `contextflow install opencode`."
let warned = false

function hookEnv() {
  return { ...process.env, ...(INSTALLED.env || {}), CONTEXTFLOW_CLIENT: "opencode" }
}

// `contextflow hook EVENT` with the payload on stdin; resolves to its stdout ("" on any failure).
function runHook(event, payload) {
  const command = contextflowCommand()
  if (!command) {
    if (!warned) console.error(MISSING)
    warned = true
    return Promise.resolve("")
  }
  return new Promise((resolve) => {
    let child
    try {
      child = spawn(command[0], [...command.slice(1), "hook", event], {
        env: hookEnv(),
        stdio: ["pipe", "pipe", "ignore"],
      })
    } catch {
      resolve("")
      return
    }
    let output = ""
    const timer = setTimeout(() => {
      child.kill("SIGKILL")
      resolve("")
    }, TIMEOUT_MS)
    child.on("error", () => {
      clearTimeout(timer)
      resolve("")
    })
    child.stdout.on("data", (data) => {
      if (output.length < MAX_OUTPUT) output += data
    })
    child.on("close", () => {
      clearTimeout(timer)
      resolve(output)
    })
    child.stdin.on("error", () => {})
    child.stdin.end(JSON.stringify(payload))
  })
}

// `contextflow hook EVENT` detached, its stdin a file already written: it finishes even when
// OpenCode exits right after the event (as `opencode run` does once the session is idle).
function runDetached(event, payload) {
  const command = contextflowCommand()
  if (!command) return
  const file = join(tmpdir(), `contextflow-${process.pid}-${Date.now()}-${Math.random().toString(36).slice(2)}.json`)
  let fd
  try {
    writeFileSync(file, JSON.stringify(payload), { mode: 0o600 })
    fd = openSync(file, "r")
    unlinkSync(file)
    const child = spawn(command[0], [...command.slice(1), "hook", event], {
      env: hookEnv(),
      stdio: [fd, "ignore", "ignore"],
      detached: true,
    })
    child.on("error", () => {})
    child.unref()
  } catch {
    // capture is best effort: never break the session
  } finally {
    if (fd !== undefined) closeSync(fd)
    if (existsSync(file)) unlinkSync(file)
  }
}

function additionalContext(output) {
  try {
    const text = JSON.parse(output)?.hookSpecificOutput?.additionalContext
    return typeof text === "string" ? text.trim() : ""
  } catch {
    return ""
  }
}

export const ContextflowPlugin = async ({ directory }) => {
  const started = new Set() // sessions whose first prompt got the session start in this process
  const added = new Map() // user message id -> the text contextflow adds to it in model requests

  async function contextFor(sessionID) {
    const payload = { session_id: sessionID, cwd: directory }
    if (!started.has(sessionID)) {
      started.add(sessionID)
      const output = await runHook("session-start", { ...payload, hook_event_name: "SessionStart", source: "startup" })
      return additionalContext(output)
    }
    return additionalContext(await runHook("prompt-submit", { ...payload, hook_event_name: "UserPromptSubmit" }))
  }

  return {
    // a prompt was submitted: fetch what contextflow adds to it (the session start, or results)
    "chat.message": async (input, output) => {
      const sessionID = input?.sessionID
      const messageID = output?.message?.id
      if (typeof sessionID !== "string" || typeof messageID !== "string") return
      const text = await contextFor(sessionID)
      if (text) added.set(messageID, text)
    },
    // each request of the agent loop: the text rides with its prompt, in the model request only
    // (not stored in the session, not sent to side requests such as the title)
    "experimental.chat.messages.transform": async (_input, output) => {
      for (const message of output?.messages || []) {
        const info = message?.info
        const text = info?.role === "user" ? added.get(info.id) : undefined
        if (!text || !Array.isArray(message.parts) || message.parts.some((part) => part?.contextflow)) continue
        const last = message.parts[message.parts.length - 1] || {}
        message.parts = [
          ...message.parts,
          {
            id: `${last.id || "prt"}cf`,
            sessionID: info.sessionID,
            messageID: info.id,
            type: "text",
            text,
            synthetic: true,
            contextflow: true,
          },
        ]
      }
    },
    event: async ({ event }) => {
      const sessionID = event?.properties?.sessionID
      if (typeof sessionID !== "string") return
      if (event.type === "session.idle" || event.type === "session.compacted") {
        runDetached(event.type === "session.idle" ? "stop" : "pre-compact", {
          session_id: sessionID,
          cwd: directory,
          hook_event_name: event.type,
        })
      }
    },
  }
}
