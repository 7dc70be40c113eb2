#!/usr/bin/env node
// Builds the native addon (polylock.node) from the Rust sources with cargo, release mode, and
// optionally the TypeScript declarations napi-rs derives from them.
//
//   node scripts/build-native.js                   build the addon
//   node scripts/build-native.js --dts index.d.ts  also write the declarations there
//   node scripts/build-native.js --if-missing      do nothing when polylock.node is there
//
// `npm install` runs it with --if-missing: a tarball from `npm pack` ships polylock.node and
// skips the build; a checkout installed with `npm install ./bindings-node` builds it here
// (this needs a Rust toolchain). CARGO_TARGET_DIR is honoured.
//
// Why not `napi build`: it always passes `--target <host triple>`, which makes cargo build
// every dependency a second time in another directory than the workspace's own build. Here
// cargo builds into the workspace's usual directory, and @napi-rs/cli's own generateTypeDef
// turns the fragments napi-derive writes (NAPI_TYPE_DEF_TMP_FOLDER) into index.d.ts.
'use strict'

const { execFileSync } = require('node:child_process')
const fs = require('node:fs')
const path = require('node:path')
const { parseArgs } = require('node:util')

const packageDir = path.resolve(__dirname, '..')
const addon = path.join(packageDir, 'polylock.node')
const CRATE = 'polylock-node'

function fail(message) {
  console.error(`polylock: ${message}`)
  process.exit(1)
}

function cargo(args, options = {}) {
  try {
    return execFileSync('cargo', args, { cwd: packageDir, ...options })
  } catch (err) {
    if (err.code === 'ENOENT') {
      fail('building the native addon needs a Rust toolchain (cargo on PATH): see https://rustup.rs')
    }
    fail(`cargo ${args.join(' ')} failed (status ${err.status})`)
  }
}

async function main() {
  const { values: options } = parseArgs({
    options: { dts: { type: 'string' }, 'if-missing': { type: 'boolean', default: false } },
  })
  if (options['if-missing'] && fs.existsSync(addon)) return

  const manifest = path.join(packageDir, 'Cargo.toml')
  if (!fs.existsSync(manifest)) {
    fail(`${addon} is missing and there are no Rust sources here to build it from; reinstall the package`)
  }
  const metadata = JSON.parse(cargo(['metadata', '--format-version', '1', '--no-deps', '--manifest-path', manifest]))
  const env = { ...process.env }
  let typeDefDir
  if (options.dts) {
    // A fixed folder, so that cargo's view of the environment stays the same between runs.
    typeDefDir = path.join(metadata.target_directory, 'polylock-node-typedefs')
    fs.mkdirSync(typeDefDir, { recursive: true })
    env.NAPI_TYPE_DEF_TMP_FOLDER = typeDefDir
    if (!fs.existsSync(path.join(typeDefDir, CRATE))) {
      // No fragments yet: make cargo compile the crate (and so run napi-derive) again.
      env[`NAPI_FORCE_BUILD_${CRATE.replace(/-/g, '_').toUpperCase()}`] = String(Date.now())
    }
  }
  cargo(['build', '--release', '--locked', '-p', CRATE, '--manifest-path', manifest], { stdio: 'inherit', env })

  const libraryFile = { linux: 'libpolylock_node.so', darwin: 'libpolylock_node.dylib', win32: 'polylock_node.dll' }[
    process.platform
  ]
  if (!libraryFile) fail(`unsupported platform ${process.platform}`)
  const built = path.join(metadata.target_directory, 'release', libraryFile)
  // Copy to a temporary name and rename, so a running process never sees a half-written addon.
  const partial = `${addon}.partial-${process.pid}`
  fs.copyFileSync(built, partial)
  fs.renameSync(partial, addon)

  if (options.dts) {
    const { generateTypeDef } = await import('@napi-rs/cli')
    const { dts } = await generateTypeDef({ typeDefDir, cwd: packageDir, dtsHeaderFile: 'dts-header.d.ts' })
    fs.writeFileSync(path.resolve(options.dts), dts)
  }
}

main().catch((err) => fail(err.stack ?? String(err)))
