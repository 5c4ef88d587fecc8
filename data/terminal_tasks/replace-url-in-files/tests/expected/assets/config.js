const API_BASE = "https://new.example.com/api";
const CDN = "https://cdn.example.org";
export { API_BASE, CDN };
