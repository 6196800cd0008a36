#!/usr/bin/env node
// The editguard command of the npm package: it runs the editguard binary of
// the platform package for this system (@editguard/linux-x64, ...), an
// optional dependency of this package, with the same arguments. The binary
// gets this process's stdin, stdout and stderr, the signals this process is
// sent, and its exit status is this process's.
"use strict";

const childProcess = require("child_process");
const fs = require("fs");
const os = require("os");
const path = require("path");

// The platform packages, by Node's process.platform and process.arch.
const PACKAGES = {
  "darwin-arm64": "@editguard/darwin-arm64",
  "darwin-x64": "@editguard/darwin-x64",
  "linux-arm64": "@editguard/linux-arm64",
  "linux-x64": "@editguard/linux-x64",
};

// The signals passed on to the binary. SIGUSR1 is left to Node, which
// starts its inspector on it; SIGKILL and SIGSTOP cannot be caught.
const FORWARDED = ["SIGINT", "SIGTERM", "SIGHUP", "SIGQUIT", "SIGUSR2"];

function fail(message) {
  process.stderr.write("editguard: " + message + "\n");
  process.exit(1);
}

function ownVersion() {
  return require(path.join(__dirname, "..", "package.json")).version;
}

// binaryPath returns the path of the editguard binary in the platform
// package for this system, or exits with an error that says what to do.
function binaryPath() {
  const key = process.platform + "-" + process.arch;
  const pkg = PACKAGES[key];
  if (!pkg) {
    fail(
      "there is no editguard binary for " + process.platform + " " + process.arch +
        "; editguard runs on Linux and macOS, on x64 and arm64.\n" +
        "On another Unix system, build it from source with Go:\n" +
        "  go install github.com/editguard/editguard/cmd/editguard@latest",
    );
  }
  const version = ownVersion();
  let manifest;
  try {
    manifest = require.resolve(pkg + "/package.json");
  } catch (err) {
    fail(
      "the package " + pkg + ", which holds the editguard binary for " + key +
        ", is not installed.\n" +
        "It is an optional dependency of editguard, left out when optional dependencies\n" +
        "are omitted (--omit=optional, --no-optional) or when the lock file was made on\n" +
        "another platform. Install it next to editguard:\n" +
        "  npm install " + pkg + "@" + version,
    );
  }
  const dir = path.dirname(manifest);
  let pkgVersion;
  try {
    pkgVersion = JSON.parse(fs.readFileSync(manifest, "utf8")).version;
  } catch (err) {
    pkgVersion = undefined;
  }
  if (pkgVersion !== version) {
    process.stderr.write(
      "editguard: warning: " + pkg + " is version " + pkgVersion +
        ", not " + version + " as the editguard package; reinstall editguard\n",
    );
  }
  return path.join(dir, "bin", "editguard");
}

function main() {
  const bin = binaryPath();
  const child = childProcess.spawn(bin, process.argv.slice(2), { stdio: "inherit" });

  const forward = {};
  for (const sig of FORWARDED) {
    forward[sig] = () => {
      try {
        child.kill(sig);
      } catch (err) {
        // The binary has exited already; its exit ends this process.
      }
    };
    process.on(sig, forward[sig]);
  }
  const stopForwarding = () => {
    for (const sig of FORWARDED) process.removeListener(sig, forward[sig]);
  };

  child.on("error", (err) => {
    stopForwarding();
    fail("cannot run " + bin + ": " + err.message);
  });
  child.on("exit", (code, signal) => {
    stopForwarding();
    if (signal) {
      // End this process by the same signal, so that its parent sees what
      // the binary's parent would have seen.
      const num = os.constants.signals[signal] || 0;
      try {
        process.kill(process.pid, signal);
      } catch (err) {
        process.exit(128 + num);
      }
      // A signal whose default action is not to terminate.
      setTimeout(() => process.exit(128 + num), 100).unref();
      return;
    }
    process.exit(code === null ? 1 : code);
  });
}

main();
