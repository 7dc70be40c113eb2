// Loads polylock's native addon the way napi-rs's generated loaders do: the file for this
// platform beside this one (the release tarball ships the platform it was built on), else the
// per-platform package `polylock-<platform>` (how further platforms are added: one optional
// dependency each). Copied into the release package by release/build.sh.
'use strict'

// glibc or musl: Node's own report names the glibc it runs on, and none under musl.
function libc() {
  const header = process.report ? process.report.getReport().header : {}
  return header.glibcVersionRuntime ? 'gnu' : 'musl'
}

function platformName() {
  const arch = { x64: 'x64', arm64: 'arm64' }[process.arch]
  if (process.platform === 'linux' && arch) {
    return `linux-${arch}-${libc()}`
  }
  if (process.platform === 'darwin' && arch) return `darwin-${arch}`
  if (process.platform === 'win32' && arch) return `win32-${arch}-msvc`
  return `${process.platform}-${process.arch}`
}

const platform = platformName()
const errors = []
for (const candidate of [`./polylock.${platform}.node`, `polylock-${platform}`]) {
  try {
    module.exports = require(candidate)
    return
  } catch (err) {
    if (err.code !== 'MODULE_NOT_FOUND') throw err
    errors.push(err.message.split('\n')[0])
  }
}
throw new Error(
  `polylock has no native addon for ${platform} (tried: ${errors.join('; ')}); ` +
    'install from source (npm install <checkout>/bindings-node, needs Rust) on this platform',
)
