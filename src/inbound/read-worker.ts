// A reading thread (see read.ts): parses and authenticates the messages it is sent.
import { serveThread } from '../lib/thread-pool'
import { readHere } from './read'

serveThread(readHere)
