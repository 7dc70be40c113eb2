// The web build in a real headless browser: Debian's chromium, driven by puppeteer-core (no
// browser download), loading the ES module from a static server on 127.0.0.1 and checking
// the same vectors as the Node suite (browser/page.mjs).
//
// POLYLOCK_CHROMIUM names the browser (default /usr/bin/chromium; run-tests.sh installs it).
import test from 'node:test'
import assert from 'node:assert/strict'
import { createServer } from 'node:http'
import { readFile } from 'node:fs/promises'
import { extname, join, normalize } from 'node:path'
import puppeteer from 'puppeteer-core'

import { packageDir } from './helpers.mjs'

const TYPES = { '.html': 'text/html', '.mjs': 'text/javascript', '.js': 'text/javascript', '.wasm': 'application/wasm', '.tsv': 'text/plain' }

/** Serves the package folder (read-only, nothing outside it) on an ephemeral loopback port. */
async function startServer() {
  const server = createServer(async (request, response) => {
    const path = normalize(decodeURIComponent(new URL(request.url, 'http://x').pathname))
    if (path.includes('..') || path.startsWith('/node_modules')) return response.writeHead(403).end()
    try {
      const body = await readFile(join(packageDir, path))
      response.writeHead(200, { 'content-type': TYPES[extname(path)] ?? 'application/octet-stream' }).end(body)
    } catch {
      response.writeHead(404).end()
    }
  })
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve))
  return server
}

test('the web build in headless Chromium: shared vectors and live generation', async () => {
  const server = await startServer()
  const browser = await puppeteer.launch({
    executablePath: process.env.POLYLOCK_CHROMIUM ?? '/usr/bin/chromium',
    headless: true,
    // --no-sandbox: CI runs as root, where Chromium's sandbox refuses to start.
    args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage', '--no-first-run'],
  })
  try {
    const page = await browser.newPage()
    const errors = []
    page.on('pageerror', (err) => errors.push(String(err)))
    page.on('console', (message) => message.type() === 'error' && errors.push(message.text()))
    await page.goto(`http://127.0.0.1:${server.address().port}/test/browser/page.html`)
    await page.waitForFunction(() => window.polylockResult !== undefined, { timeout: 60_000 })
    const result = await page.evaluate(() => window.polylockResult)
    assert.deepEqual(result.failures, [], JSON.stringify(result))
    assert.deepEqual(errors, [])
    assert.match(result.userAgent, /HeadlessChrome|Chrome/)
    assert.ok(result.checks > 80, `only ${result.checks} vector checks ran`)
    console.log(`${result.userAgent}: ${result.checks} vector checks, sample ${JSON.stringify(result.sample)}`)
  } finally {
    await browser.close()
    await new Promise((resolve) => server.close(resolve))
  }
})
