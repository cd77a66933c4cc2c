// Article 001's Node.js program: N promisified setTimeout delays of 10 s, awaited with
// Promise.all; exits when all finish. The one change: an optional second argument, the delay in
// milliseconds.
const util = require('util');
const delay = util.promisify(setTimeout);

async function runTasks(numTasks, delayMs) {
  const tasks = [];

  for (let i = 0; i < numTasks; i++) {
    tasks.push(delay(delayMs));
  }

  await Promise.all(tasks);
}

const numTasks = parseInt(process.argv[2]);
const delayMs = process.argv.length > 3 ? parseInt(process.argv[3]) : 10000;
runTasks(numTasks, delayMs);
