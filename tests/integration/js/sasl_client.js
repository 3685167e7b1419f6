// kafkajs 2.2.4 over SASL_PLAINTEXT with one mechanism at its defaults:
// produces COUNT records to a new topic and consumes them back, printing
// "OK n"; with a wrong password it prints "AUTH <error name>: <message>"
// (the error kafkajs raises on connect). Used by test_sasl.py.
//   node sasl_client.js BOOTSTRAP MECHANISM USER PASSWORD TOPIC COUNT
'use strict'

const { Kafka, logLevel } = require('kafkajs')

const [bootstrap, mechanism, username, password, topic, countArg] = process.argv.slice(2)
const count = Number(countArg)
const kafka = new Kafka({ clientId: 'ls-sasl', brokers: [bootstrap], logLevel: logLevel.NOTHING,
  sasl: { mechanism, username, password }, retry: { retries: 2 } })

async function main () {
  const producer = kafka.producer()
  try {
    await producer.connect()
  } catch (e) {
    console.log(`AUTH ${e.name}: ${e.message}`)
    return
  }
  await producer.send({ topic,
    messages: Array.from({ length: count }, (_, i) => ({ value: `v${i}` })) })
  await producer.disconnect()
  const consumer = kafka.consumer({ groupId: `ls-sasl-${Date.now()}`, maxWaitTimeInMs: 100 })
  await consumer.connect()
  await consumer.subscribe({ topic, fromBeginning: true })
  let seen = 0
  await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`timed out after ${seen} records`)), 60000)
    consumer.run({
      eachMessage: async ({ message }) => {
        if (message.value.toString() !== `v${seen}`) reject(new Error('out of order'))
        if (++seen === count) {
          clearTimeout(timer)
          resolve()
        }
      }
    })
  })
  await consumer.disconnect()
  console.log(`OK ${seen}`)
}

main().catch(e => { console.error(e); process.exit(1) })
