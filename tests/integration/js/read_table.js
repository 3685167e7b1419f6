// Reads a Lakestream raw Kafka table (Iceberg v2 on the local filesystem) with
// two JavaScript readers that share no code with our writers, and prints what
// each one saw as JSON, for tests/integration/test_table_readers.py to compare
// with what was produced.
//
//   node read_table.js TABLE_DIR      e.g. <data.dir>/objects/warehouse/default/<topic>
//
// (a) hyparquet (+ hyparquet-compressors): every data file the current
//     snapshot lists, read from the local disk, binary columns kept as bytes.
// (b) icebird: the whole table, as an Iceberg reader does it (version-hint.text
//     → metadata JSON → manifest list → manifests → data files). icebird only
//     speaks HTTP, so TABLE_DIR is served by a small static server on
//     127.0.0.1 (GET/HEAD with byte ranges). The table's location is a file://
//     URI and every path inside its metadata is location-based, so fetches of
//     URLs under that location are routed to the server; any other URL fails.
//     icebird uses its own pinned hyparquet (1.19) and Avro decoder.
//
// Output (stdout, one JSON object):
//   metadata_file (the one version-hint.text names), location, http_requests, http_bytes,
//   files: [{path, content, record_count, file_size_in_bytes}] from the manifests,
//          plus codecs and encodings from each file's footer (hyparquet)
//   hyparquet: {rows} or {error};  icebird: {rows} or {error}
// A row is {partition, offset, timestamp, key, value, headers}, every value
// tagged so nothing is lost in JSON: integers that are BigInt in JS become
// {"int": "decimal"}, bytes {"hex": ...}, text {"utf8": ...}, a JS Date
// {"ms": n}, null stays null. Any other JS type is an error, not a guess.
// Exit code 0 when both readers succeeded, 1 otherwise, 2 on bad usage.
'use strict'

const fs = require('node:fs')
const http = require('node:http')
const path = require('node:path')

function tag(v, what) {
  if (v === null || v === undefined) return null
  if (typeof v === 'bigint') return { int: v.toString() }
  if (typeof v === 'number' && Number.isInteger(v)) return { int: String(v) }
  if (v instanceof Uint8Array) return { hex: Buffer.from(v.buffer, v.byteOffset, v.byteLength).toString('hex') }
  if (typeof v === 'string') return { utf8: v }
  if (v instanceof Date) return { ms: v.getTime() }
  throw new Error(`${what}: unexpected JS value ${Object.prototype.toString.call(v)} ${String(v)}`)
}

function encodeRow(r) {
  const headers = r.headers
  if (headers !== null && headers !== undefined && !Array.isArray(headers)) {
    throw new Error(`headers: expected a list, got ${Object.prototype.toString.call(headers)}`)
  }
  return {
    partition: tag(r.partition, 'partition'),
    offset: tag(r.offset, 'offset'),
    timestamp: tag(r.timestamp, 'timestamp'),
    key: tag(r.key, 'key'),
    value: tag(r.value, 'value'),
    headers: headers ? headers.map(h => ({ key: tag(h.key, 'header key'), value: tag(h.value, 'header value') }))
      : tag(headers, 'headers'),
  }
}

// serveDirectory(root): a read-only static server for root on 127.0.0.1.
function serveDirectory(root, stats) {
  const server = http.createServer((req, res) => {
    stats.requests++
    const fail = (code, why) => { res.writeHead(code, { 'Content-Type': 'text/plain' }); res.end(why + '\n') }
    if (req.method !== 'GET' && req.method !== 'HEAD') return fail(405, 'GET and HEAD only')
    let file
    try {
      file = path.resolve(root, '.' + decodeURIComponent(new URL(req.url, 'http://x').pathname))
    } catch (e) {
      return fail(400, 'bad path')
    }
    if (file !== root && !file.startsWith(root + path.sep)) return fail(403, 'outside the served directory')
    let st
    try {
      st = fs.statSync(file)
    } catch (e) {
      return fail(404, 'not found')
    }
    if (!st.isFile()) return fail(404, 'not a file')
    let start = 0
    let end = st.size - 1
    let code = 200
    const headers = { 'Accept-Ranges': 'bytes', 'Content-Type': 'application/octet-stream' }
    if (req.headers.range !== undefined) {
      const m = /^bytes=(\d+)-(\d*)$/.exec(req.headers.range)
      if (!m) return fail(416, 'unsupported range')
      start = Number(m[1])
      if (m[2] !== '') end = Math.min(Number(m[2]), st.size - 1)
      if (start > end) {
        res.writeHead(416, { 'Content-Range': `bytes */${st.size}` })
        return res.end()
      }
      code = 206
      headers['Content-Range'] = `bytes ${start}-${end}/${st.size}`
    }
    headers['Content-Length'] = String(end - start + 1)
    res.writeHead(code, headers)
    if (req.method === 'HEAD' || st.size === 0) return res.end()
    stats.bytes += end - start + 1
    fs.createReadStream(file, { start, end }).pipe(res)
  })
  return new Promise((resolve, reject) => {
    server.once('error', reject)
    server.listen(0, '127.0.0.1', () => resolve(server))
  })
}

// routeTableUrls(location, base): makes fetch() reach URLs under the table's
// location through the server at base; every other URL is refused.
function routeTableUrls(location, base) {
  const realFetch = globalThis.fetch
  const prefix = location.replace(/\/+$/, '')
  globalThis.fetch = (input, init) => {
    const url = typeof input === 'string' ? input : input.url
    if (url.startsWith(base + '/')) return realFetch(url, init)
    if (url.startsWith(prefix + '/')) return realFetch(base + url.slice(prefix.length), init)
    return Promise.reject(new Error(`fetch of ${url}: not under the table location ${location}`))
  }
}

async function readWithHyparquet(hyparquet, compressors, files, tableDir, location) {
  const rows = []
  for (const f of files) {
    const local = path.join(tableDir, f.path.slice(location.replace(/\/+$/, '').length))
    const file = await hyparquet.asyncBufferFromFile(local)
    if (file.byteLength !== f.file_size_in_bytes) {
      throw new Error(`${local}: ${file.byteLength} bytes, manifest says ${f.file_size_in_bytes}`)
    }
    const metadata = await hyparquet.parquetMetadataAsync(file)
    const codecs = new Set()
    const encodings = new Set()
    for (const rg of metadata.row_groups) {
      for (const c of rg.columns) {
        codecs.add(c.meta_data.codec)
        for (const e of c.meta_data.encodings) encodings.add(e)
      }
    }
    f.codecs = [...codecs].sort()
    f.encodings = [...encodings].sort()
    const got = await hyparquet.parquetReadObjects({
      file,
      metadata,
      compressors,
      utf8: false, // Iceberg binary is an unannotated BYTE_ARRAY: keep it bytes
      parsers: { timestampFromMicroseconds: us => us }, // exact micros, not a Date
    })
    if (BigInt(got.length) !== BigInt(f.record_count)) {
      throw new Error(`${local}: ${got.length} rows, manifest record_count ${f.record_count}`)
    }
    for (const r of got) rows.push(encodeRow(r))
  }
  return rows
}

async function main() {
  if (process.argv.length !== 3) {
    console.error('usage: node read_table.js TABLE_DIR')
    process.exit(2)
  }
  const tableDir = fs.realpathSync(process.argv[2])
  const hyparquet = await import('hyparquet')
  const { compressors } = await import('hyparquet-compressors')
  const icebird = await import('icebird')

  const stats = { requests: 0, bytes: 0 }
  const server = await serveDirectory(tableDir, stats)
  const base = `http://127.0.0.1:${server.address().port}`
  const out = {}
  try {
    const version = await icebird.icebergLatestVersion({ tableUrl: base })
    out.metadata_file = `${version}.metadata.json`
    const metadata = await icebird.icebergMetadata({ tableUrl: base, metadataFileName: out.metadata_file })
    out.location = metadata.location
    routeTableUrls(metadata.location, base)

    const manifests = await icebird.icebergManifests(metadata)
    out.files = []
    for (const m of manifests) {
      for (const e of m.entries) {
        if (e.status === 2) continue // DELETED entries are not part of the snapshot
        out.files.push({
          path: e.data_file.file_path,
          content: Number(e.data_file.content ?? 0),
          record_count: Number(e.data_file.record_count),
          file_size_in_bytes: Number(e.data_file.file_size_in_bytes),
        })
      }
    }
    try {
      out.hyparquet = { rows: await readWithHyparquet(hyparquet, compressors, out.files, tableDir, metadata.location) }
    } catch (e) {
      out.hyparquet = { error: e.stack || String(e) }
    }
    try {
      const rows = await icebird.icebergRead({ tableUrl: base, metadata })
      out.icebird = { rows: rows.map(encodeRow) }
    } catch (e) {
      out.icebird = { error: e.stack || String(e) }
    }
  } finally {
    server.close()
  }
  out.http_requests = stats.requests
  out.http_bytes = stats.bytes
  process.stdout.write(JSON.stringify(out) + '\n')
  process.exitCode = out.hyparquet.error || out.icebird.error ? 1 : 0
}

main().catch(e => {
  console.error(e.stack || String(e))
  process.exit(1)
})
