// hidden_instructions: text addressed to the model rather than describing the tool. Each pattern
// is one documented family (docs/guardrails/scanning.md); a pattern is added only with a test of
// the attack it catches and of the ordinary wording it must leave alone.

export interface InstructionPattern {
  readonly id: string
  readonly reason: string
  readonly pattern: RegExp
}

/** Verbs that move data somewhere (any inflection: send, sends, sent, sending). */
const EXFILTRATE = String.raw`(?:send|sent|upload|post(?:s|ed|ing)?\b|includ|attach|append|embed|forward|transmit|exfiltrat|leak|copy|copie|pass(?:es|ed|ing)?\b|paste|shar(?:e|es|ed|ing)\b|provid)\w*`
/** Verbs that hand credentials over; not "provide" or "pass", which ordinary docs use ("provide your API key"). */
const HAND_OVER = String.raw`(?:send|sent|upload|includ|attach|append|embed|forward|transmit|exfiltrat|leak|copy|copie|paste)\w*`
/** Verbs that read data (for files only). */
const READ = String.raw`(?:read|open|cat\b|load|dump|extract|print)\w*`
/** Within one sentence: no sentence end between the verb and its object. */
const NEAR = String.raw`[^.!?\n]{0,80}?`

const SENSITIVE_FILE = String.raw`(?:~\/\.ssh|\.ssh\/|\bid_(?:rsa|dsa|ecdsa|ed25519)\b|\/etc\/(?:passwd|shadow|sudoers)\b|\.aws\/credentials|~\/\.aws\b|\.git-credentials|\.netrc\b|\.npmrc\b|\.pypirc\b|\.kube\/config|\.docker\/config\.json|(?<![\w.\/-])\.env(?:\.\w+)?\b)`
const CREDENTIAL = String.raw`(?:api[ _-]?keys?|secret[ _-]?keys?|access[ _-]?tokens?|auth(?:entication|orization)?[ _-]?tokens?|bearer tokens?|refresh tokens?|credentials|passwords?|passphrases?|private[ _-]?keys?|session (?:cookies?|tokens?)|ssh keys?)`
const CONVERSATION = String.raw`(?:(?:conversation|chat|message)\s+(?:history|log|transcript|so far)|(?:entire|full|whole|previous|prior|earlier)\s+(?:conversation|chat|messages)|all (?:previous |prior |earlier )?messages|system\s+prompt|your (?:system )?instructions)`

export const INSTRUCTION_PATTERNS: readonly InstructionPattern[] = [
  {
    id: 'instruction-block',
    reason: 'hidden-instruction block',
    pattern: /<\s*\/?\s*(?:important|system|instructions?|secret|hidden|admin|assistant|sys|context)\s*>|\[\/?INST\]|<<\/?SYS>>|<\|(?:im_start|im_end|system|assistant|user)\|>/i
  },
  { id: 'html-comment', reason: 'HTML comment (hidden when rendered)', pattern: /<!--[\s\S]*?\w[\s\S]*?-->/ },
  {
    id: 'ignore-previous',
    reason: 'tells the model to ignore its instructions',
    pattern: /\b(?:ignore|disregard|forget|override|bypass)\s+(?:all\s+|any\s+|the\s+|your\s+|of\s+the\s+)*(?:previous|prior|above|earlier|preceding|other|original|system)\s+(?:instructions?|prompts?|rules|directions|directives|guidelines|messages)/i
  },
  {
    id: 'conceal-from-user',
    reason: 'tells the model to keep something from the user',
    pattern: /\b(?:do\s+not|don['’]?t|never|must\s+not|should\s+not)\s+(?:tell|inform|notify|alert|warn|mention|reveal|disclose|show|say)\s+(?:(?:this|it|that|anything|them)\s+)?(?:to\s+)?the\s+user\b|\bwithout\s+(?:telling|informing|notifying|alerting|asking)\s+the\s+user\b|\b(?:hide|conceal|keep)\s+(?:this|it|that)\s+(?:secret\s+)?from\s+the\s+user\b/i
  },
  {
    id: 'sensitive-file',
    reason: 'asks to read or send a sensitive file',
    pattern: new RegExp(String.raw`\b(?:${EXFILTRATE}|${READ})\b${NEAR}${SENSITIVE_FILE}|${SENSITIVE_FILE}[^!?\n]{0,60}?\b(?:${EXFILTRATE}|${READ})\b`, 'i')
  },
  {
    id: 'credentials',
    reason: 'asks to send credentials',
    pattern: new RegExp(String.raw`\b${HAND_OVER}\b${NEAR}\b(?:the|all|any|every|user['’]?s?|your)\s+${NEAR}${CREDENTIAL}\b`, 'i')
  },
  {
    id: 'conversation',
    reason: 'asks to send the conversation or the model\'s instructions',
    pattern: new RegExp(String.raw`\b(?:${EXFILTRATE}|reveal\w*|output\w*|repeat\w*|summari[sz]\w*|print\w*|put|puts|add|adds|write|writes)\b${NEAR}\b${CONVERSATION}\b`, 'i')
  }
]

export interface InstructionHit { readonly id: string, readonly reason: string, readonly match: string }

/** Every family that matches `text`, once each. */
export function findInstructions (text: string): InstructionHit[] {
  const hits: InstructionHit[] = []
  for (const { id, reason, pattern } of INSTRUCTION_PATTERNS) {
    const m = pattern.exec(text)
    if (m !== null) hits.push({ id, reason, match: m[0] })
  }
  return hits
}
