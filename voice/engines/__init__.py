"""Speech engines behind Pipecat's own STT/TTS bases (docs/sockets.md#voice-pipeline).

Offline: `espeak` (espeak-ng TTS, SSML) and `whisper` (Whisper tiny.en STT). Production:
`google` (Cloud Speech-to-Text streaming, Text-to-Speech over HTTP with SSML). Each
module is imported on its own by the composition root, so choosing one engine never
loads another's libraries; this package therefore re-exports nothing.
"""
