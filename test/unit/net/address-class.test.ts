import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { classifyAddress, type AddressClass } from '../../../src/net/address-class.ts'

const TABLE: ReadonlyArray<readonly [string, AddressClass]> = [
  ['127.0.0.1', 'loopback'], ['127.255.0.9', 'loopback'], ['::1', 'loopback'],
  ['::ffff:127.0.0.1', 'loopback'], ['::ffff:7f00:1', 'loopback'], ['2002:7f00:1::', 'loopback'],
  ['169.254.169.254', 'link-local'], ['fe80::1', 'link-local'], ['fe80::1%eth0', 'link-local'], ['::ffff:169.254.169.254', 'link-local'],
  ['10.0.0.5', 'private'], ['172.16.0.1', 'private'], ['172.31.255.255', 'private'], ['192.168.1.1', 'private'],
  ['100.64.0.1', 'private'], ['100.127.255.255', 'private'], ['198.18.0.1', 'private'],
  ['fc00::1', 'private'], ['fd12:3456::1', 'private'], ['::ffff:10.0.0.5', 'private'], ['64:ff9b::a00:5', 'private'],
  ['0.0.0.0', 'unroutable'], ['0.1.2.3', 'unroutable'], ['::', 'unroutable'], ['224.0.0.1', 'unroutable'],
  ['255.255.255.255', 'unroutable'], ['192.0.2.1', 'unroutable'], ['2001:db8::1', 'unroutable'], ['ff02::1', 'unroutable'],
  ['::ffff:0.0.0.0', 'unroutable'], ['example.com', 'unroutable'], ['1.2.3', 'unroutable'], ['', 'unroutable'],
  ['8.8.8.8', 'public'], ['172.32.0.1', 'public'], ['100.128.0.1', 'public'], ['2606:4700::1111', 'public'],
  ['::ffff:8.8.8.8', 'public'], ['2002:808:808::', 'public']
]

describe('classifyAddress', () => {
  it('classifies every address by where a request to it leads, IPv4 carried in IPv6 by its IPv4', () => {
    for (const [address, expected] of TABLE) assert.equal(classifyAddress(address), expected, address)
  })
})
