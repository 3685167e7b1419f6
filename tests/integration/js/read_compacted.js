// Reads partition 0 of a topic from the beginning with kafkajs 2.2.4's consumer
// until it has seen offset LAST, and prints one JSON line per record:
// {"offset": n, "key": "...", "value": "..." | null}. Used by
// test_compacted_topics.py: kafkajs decodes key-compacted batches (gaps in
// offsets, re-encoded batches with a delete horizon) with its own decoder.
//   node read_compacted.js BOOTSTRAP TOPIC LAST
'use strict'

const { Kafka, logLevel } = require('kafkajs')

const [bootstrap, topic, lastArg] = process.argv.slice(2)
const last = BigInt(lastArg)
const kafka = new Kafka({ clientId: 'ls-read-compacted', brokers: [bootstrap],
  logLevel: logLevel.ERROR })
const consumer = kafka.consumer({ groupId: `ls-read-compacted-${Date.now()}`,
  maxWaitTimeInMs: 100 })

async function main () {
  await consumer.connect()
  await consumer.subscribe({ topic, fromBeginning: true })
  const out = []
  await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('timed out before offset ' + lastArg)), 30000)
    consumer.run({
      eachMessage: async ({ partition, message }) => {
        if (partition !== 0) return
        out.push(JSON.stringify({ offset: Number(message.offset),
          key: message.key === null ? null : message.key.toString(),
          value: message.value === null ? null : message.value.toString() }))
        if (BigInt(message.offset) >= last) {
          clearTimeout(timer)
          resolve()
        }
      },
    }).catch(reject)
  })
  await consumer.disconnect()
  console.log(out.join('\n'))
}

main().catch(e => { console.error(e.stack || String(e)); process.exit(1) })
