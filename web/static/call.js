// The call view: call Ava over WebRTC, hear her, read live captions with each sentence's
// emotion as a word, and hang up, or be hung up on when Ava says goodbye.
//
// Signalling is Pipecat's SmallWebRTC (docs/sockets.md#browser-call-page). The offer is
// POSTed to /v1/voice/webrtc/offer as soon as it exists; our ICE candidates follow with
// PATCH as the browser finds them (held back until the answer names the peer connection),
// then an empty one marks the end. The server's answer already carries all of its own
// candidates. No STUN/TURN: the server is reached directly.
//
// Captions arrive on the data channel as {"type":"transcript","role","text","emotion"}. We
// never send "ping" on the data channel: Pipecat would then expect one every 3 s and go
// quiet towards a throttled background tab.

import { api, emotionWord, withoutTags } from "./api.js";

const $ = (id) => document.getElementById(id);
let call = null; // the live call: {pc, mic, context, pcId, pending, meter, ending}

function setStatus(text) {
  $("status").textContent = text;
}

function caption(role, text, emotion) {
  const line = document.createElement("li");
  line.className = role === "user" ? "user" : "assistant";
  const who = document.createElement("span");
  who.className = "who";
  who.textContent = role === "user" ? "You" : "Ava";
  line.append(who);
  if (emotion) {
    const mood = document.createElement("span");
    mood.className = "emotion";
    mood.textContent = emotionWord(emotion);
    line.dataset.emotion = mood.textContent;
    line.append(mood);
  }
  const words = document.createElement("span");
  words.className = "text";
  words.textContent = withoutTags(text); // the server sends none; a stray one stays off screen
  line.append(words);
  $("captions").append(line);
  line.scrollIntoView({ block: "nearest" });
}

function hear(current, stream) {
  $("remote").srcObject = stream;
  // Ava's loudness, for the level meter (and for tests: data-peak keeps the loudest).
  const analyser = current.context.createAnalyser();
  analyser.fftSize = 1024;
  current.context.createMediaStreamSource(stream).connect(analyser);
  const samples = new Float32Array(analyser.fftSize);
  const level = $("level");
  current.meter = setInterval(() => {
    analyser.getFloatTimeDomainData(samples);
    const rms = Math.sqrt(samples.reduce((sum, s) => sum + s * s, 0) / samples.length);
    level.value = rms;
    level.dataset.peak = Math.max(Number(level.dataset.peak), rms).toFixed(4);
  }, 50);
}

async function sendCandidates(current, candidates) {
  if (candidates.length === 0 || call !== current) return;
  await api("PATCH", "/v1/voice/webrtc/offer", { pc_id: current.pcId, candidates });
}

function trickle(current, candidate) {
  // A null (or empty) candidate is the end of ours; the server hears it as "".
  const item = {
    candidate: candidate ? candidate.candidate : "",
    sdp_mid: candidate?.sdpMid ?? "0",
    sdp_mline_index: candidate?.sdpMLineIndex ?? 0,
  };
  if (current.pcId === null) current.pending.push(item);
  else sendCandidates(current, [item]).catch((error) => console.warn("candidate not sent", error));
}

function onMessage(current, message) {
  if (message.type === "transcript") {
    caption(message.role, message.text, message.emotion);
  } else if (message.type === "hangup") {
    // Sent after Ava's last word; the connection closes once her voice has played out.
    current.ending = "Ava ended the call.";
    setStatus(current.ending);
  } else if (message.type === "signalling" && message.message?.type === "peerLeft") {
    endCall(current);
  }
}

async function startCall() {
  $("call").disabled = true;
  const context = new AudioContext(); // made inside the click, so it is allowed to play
  let mic;
  try {
    setStatus("Asking for the microphone…");
    // Echo cancellation keeps Ava from hearing herself through the speakers (and
    // interrupting herself); noise suppression stays off because it smears words that
    // speech-to-text would otherwise have heard fine.
    const audio = { echoCancellation: true, noiseSuppression: false, autoGainControl: true };
    mic = await navigator.mediaDevices.getUserMedia({ audio });
  } catch (error) {
    context.close();
    $("call").disabled = false;
    setStatus(`No microphone: ${error.message}`);
    return;
  }
  const pc = new RTCPeerConnection({ iceServers: [] });
  const current = { pc, mic, context, pcId: null, pending: [], meter: null, ending: null };
  call = current;
  $("hangup").disabled = false;
  const channel = pc.createDataChannel("captions");
  channel.onmessage = (event) => onMessage(current, JSON.parse(event.data));
  channel.onclose = () => endCall(current);
  mic.getTracks().forEach((track) => pc.addTrack(track, mic));
  pc.ontrack = (event) => hear(current, event.streams[0] || new MediaStream([event.track]));
  pc.onicecandidate = (event) => trickle(current, event.candidate);
  pc.onconnectionstatechange = () => {
    if (pc.connectionState === "connected") setStatus("On a call with Ava.");
    if (pc.connectionState === "failed") endCall(current, "The call dropped.");
  };
  try {
    setStatus("Calling…");
    await pc.setLocalDescription(await pc.createOffer());
    const answer = await api("POST", "/v1/voice/webrtc/offer", { sdp: pc.localDescription.sdp, type: "offer" });
    current.pcId = answer.pc_id;
    await pc.setRemoteDescription({ sdp: answer.sdp, type: answer.type });
    await sendCandidates(current, current.pending.splice(0));
  } catch (error) {
    endCall(current, `Could not call: ${error.message}`);
  }
}

function endCall(current, reason = current?.ending ?? "The call ended.") {
  if (current === null || call !== current) return;
  call = null;
  clearInterval(current.meter);
  current.pc.close();
  current.mic.getTracks().forEach((track) => track.stop());
  current.context.close();
  $("remote").srcObject = null;
  $("hangup").disabled = true;
  $("call").disabled = false;
  setStatus(reason);
  $("call").focus();
}

export function setup() {
  $("call").addEventListener("click", startCall);
  $("hangup").addEventListener("click", () => endCall(call, "You hung up."));
  window.addEventListener("pagehide", () => endCall(call));
  document.addEventListener("signed-out", () => endCall(call));
}

export function show() {
  if (call === null) $("call").focus();
}
