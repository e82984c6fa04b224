'use strict'
// Loaded into every test process (package.json, tap.node-arg) and, through NODE_OPTIONS, into every
// Node process a test starts.
//
// tap's process-info module registers a module loader in each of them that records the files the
// process loads. Below Node 24.13 (where tap switches to in-thread hooks) that means Node's
// off-thread module hooks, and every module the app imports makes two trips to the hooks' thread:
// importing the app costs 1.5 CPU s with that loader and 0.8 without, in each of about 80 test
// processes. Coverage does not need it: process-info takes coverage through the inspector and adds
// the files its loader did not record. So that one loader is not registered; the rest of
// process-info (coverage, the process tree) runs as it would.
const Module = require('node:module')

const register = Module.register
if (typeof register === 'function') {
  Module.register = function registerUnlessProcessInfo(specifier, ...rest) {
    if (String(specifier).includes('/@tapjs/processinfo/')) return
    return register.call(this, specifier, ...rest)
  }
}

const options = process.env.NODE_OPTIONS ?? ''
// Inside NODE_OPTIONS' double quotes a backslash escapes the next character.
const quoted = `"--require=${__filename.replace(/[\\"]/g, '\\$&')}"`
if (!options.includes(quoted)) process.env.NODE_OPTIONS = `${quoted} ${options}`.trim()
