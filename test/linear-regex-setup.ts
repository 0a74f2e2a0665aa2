import { enableLinearRegexEngine } from '../host/linear-regex-engine';

enableLinearRegexEngine();
