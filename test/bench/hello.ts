// The ceiling for HTTP: Elysia answering a constant, nothing else.
import { Elysia } from 'elysia'

new Elysia().get('/', () => 'ok').listen(Number(process.env.PORT))
