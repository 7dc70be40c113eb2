#!/usr/bin/env node
// Writes the package.json of a release npm package from bindings-node/package.json:
//
//   node package-json.js package  SOURCE_PACKAGE_JSON PLATFORM   the main package `polylock`
//   node package-json.js platform SOURCE_PACKAGE_JSON PLATFORM   `polylock-<PLATFORM>` (napi-rs layout)
//
// The main package ships the prebuilt addon for PLATFORM beside index.js (native.js loads it)
// and no install script: installing it never runs cargo. Further platforms become packages of
// their own, `polylock-<platform>`, listed as optional dependencies when they are published.
'use strict'

const fs = require('node:fs')

const [kind, sourcePath, platform] = process.argv.slice(2)
const source = JSON.parse(fs.readFileSync(sourcePath, 'utf8'))
const [os, cpu, abi] = platform.split('-')
const addon = `polylock.${platform}.node`

let out
if (kind === 'package') {
  out = {
    name: source.name,
    version: source.version,
    description: source.description,
    license: source.license,
    main: 'index.js',
    types: 'index.d.ts',
    engines: source.engines,
    files: ['index.js', 'index.d.ts', 'native.js', 'polylock.*.node', 'README.md'],
    napi: { binaryName: source.napi.binaryName, targets: [platform] },
  }
} else if (kind === 'platform') {
  out = {
    name: `${source.name}-${platform}`,
    version: source.version,
    description: `The prebuilt native addon of ${source.name} for ${platform}`,
    license: source.license,
    main: addon,
    files: [addon, 'README.md'],
    os: [os],
    cpu: [cpu],
    ...(abi ? { libc: [abi === 'gnu' ? 'glibc' : abi] } : {}),
    engines: source.engines,
  }
} else {
  console.error('usage: package-json.js package|platform SOURCE_PACKAGE_JSON PLATFORM')
  process.exit(64)
}
process.stdout.write(`${JSON.stringify(out, null, 2)}\n`)
